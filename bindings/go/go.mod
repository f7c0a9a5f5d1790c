module github.com/gantry-s3/gantry/bindings/go

go 1.24

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/aws-sdk-go-v2/credentials v1.20.16
)

require github.com/aws/smithy-go v1.28.9 // indirect
