package gantry

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// AWSv2Provider adapts an aws-sdk-go-v2 credentials provider (anything with
// Retrieve(ctx) (aws.Credentials, error): stscreds, ec2rolecreds, ssocreds, the one
// config.LoadDefaultConfig puts in aws.Config.Credentials, ...) for WithCredentialsProvider:
//
//	cfg, _ := config.LoadDefaultConfig(ctx)
//	c, err := gantry.NewClient(gantry.Config{"region": cfg.Region},
//		gantry.WithCredentialsProvider(gantry.AWSv2Provider(cfg.Credentials)))
//
// Expires is passed on when CanExpire is set, so gantry refreshes ahead of it. gantry caches
// the keys and asks one fetch at a time, so p need not be an aws.CredentialsCache; if it is
// one, its ExpiryWindow moves the expiry gantry sees earlier than the real one, which is fine
// (without a window the cache hands back the same keys until their real expiry, and gantry
// asks a few extra times as they age). Anonymous credentials (no keys) are refused: use
// Config{"anonymous": "true"} for unsigned requests.
func AWSv2Provider(p aws.CredentialsProvider) CredentialsFunc {
	return func(ctx context.Context) (Credentials, error) {
		c, err := p.Retrieve(ctx)
		if err != nil {
			return Credentials{}, err
		}
		if !c.HasKeys() {
			return Credentials{}, errors.New("the aws-sdk-go-v2 provider returned no keys (anonymous credentials?)")
		}
		out := Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}
		if c.CanExpire {
			out.Expires = c.Expires
		}
		return out, nil
	}
}
