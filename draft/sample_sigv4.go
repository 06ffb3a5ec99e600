package draft

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/smithy-go/aws-http-auth/credentials"
	"github.com/aws/smithy-go/aws-http-auth/sigv4"
)

// AWS's usual variables for the keys a SigV4 sample is signed with, and
// the drafted credential reads.
const (
	SigV4KeyEnv    = "AWS_ACCESS_KEY_ID"
	SigV4SecretEnv = "AWS_SECRET_ACCESS_KEY"
	SigV4TokenEnv  = "AWS_SESSION_TOKEN"
)

// SampleSigV4 is the region and service a sample is signed for.
type SampleSigV4 struct {
	Region, Service string
	// SessionToken is set by FromSample when AWS_SESSION_TOKEN is.
	SessionToken bool
}

// signSample signs the sample request with AWS's own signer, its body's
// hash included.
func signSample(req *http.Request, opts SampleOptions) error {
	if opts.Getenv == nil {
		return fmt.Errorf("signing the sample needs %s and %s", SigV4KeyEnv, SigV4SecretEnv)
	}
	id, secret := strings.TrimSpace(opts.Getenv(SigV4KeyEnv)), strings.TrimSpace(opts.Getenv(SigV4SecretEnv))
	if id == "" || secret == "" {
		return fmt.Errorf("signing the sample needs %s and %s set", SigV4KeyEnv, SigV4SecretEnv)
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	hash := sha256.Sum256(body)
	token := strings.TrimSpace(opts.Getenv(SigV4TokenEnv))
	opts.SigV4.SessionToken = token != ""
	err := sigv4.New().SignRequest(&sigv4.SignRequestInput{
		Request:     req,
		PayloadHash: hash[:],
		Credentials: credentials.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token},
		Service:     opts.SigV4.Service,
		Region:      opts.SigV4.Region,
	})
	if err != nil {
		return fmt.Errorf("sign the sample: %w", err)
	}
	return nil
}
