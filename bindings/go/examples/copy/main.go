// Command copy uploads a local file to S3 and downloads it back next to it.
//
//	go run ./examples/copy ENDPOINT BUCKET KEY FILE
//
// (with PKG_CONFIG_PATH naming the gantry.pc of an install prefix, or of the checkout's
// scripts/build-ffi.sh).
//
// Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
package main

import (
	"context"
	"fmt"
	"os"

	gantry "github.com/gantry-s3/gantry/bindings/go"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: copy ENDPOINT BUCKET KEY FILE")
		os.Exit(2)
	}
	endpoint, bucket, key, file := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	c, err := gantry.NewClient(gantry.Config{"endpoint_url": endpoint})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	if err := c.PutFile(context.Background(), bucket, key, file); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n, err := c.DownloadToFile(context.Background(), bucket, key, file+".back")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("uploaded %s and downloaded %d bytes into %s.back\n", file, n, file)
}
