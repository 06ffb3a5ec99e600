package transport

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/aws/smithy-go/aws-http-auth/credentials"
	"github.com/aws/smithy-go/aws-http-auth/sigv4"
)

// sigV4 signs requests with AWS Signature Version 4 through AWS's own
// signer: the signature covers the method, path, query, Host, X-Amz-Date,
// every X-Amz-* header (X-Amz-Target names a JSON API's operation) and
// the SHA-256 of the body. Each attempt is signed at its own time, so a
// retry after a long Retry-After is not refused as stale.
type sigV4 struct {
	signer          *sigv4.Signer
	creds           credentials.Credentials
	region, service string
	clock           clock.Clock
}

// loadSigV4Form reads an AWS Signature Version 4 credential.
func loadSigV4Form(c *credential, cr *config.CredentialConfig, opts Options, _ time.Duration) ([]string, error) {
	sg, secrets, err := loadSigV4(cr.SigV4, opts)
	if err != nil {
		return nil, err
	}
	c.sigv4 = sg
	c.secrets = secrets
	return []string{sg.creds.AccessKeyID, sg.creds.SecretAccessKey, sg.creds.SessionToken, sg.region, sg.service}, nil
}

// loadSigV4 reads the access key, its secret and the session token.
func loadSigV4(s *config.SigV4Config, opts Options) (*sigV4, []string, error) {
	id, err := readSecret(s.AccessKeyID, "credential: aws_sigv4: access_key_id", opts.Getenv)
	if err != nil {
		return nil, nil, err
	}
	secret, err := readSecret(s.SecretAccessKey, "credential: aws_sigv4: secret_access_key", opts.Getenv)
	if err != nil {
		return nil, nil, err
	}
	var token string
	if s.SessionToken != nil {
		if token, err = readSecret(*s.SessionToken, "credential: aws_sigv4: session_token", opts.Getenv); err != nil {
			return nil, nil, err
		}
	}
	sg := &sigV4{
		signer:  sigv4.New(),
		creds:   credentials.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token},
		region:  s.Region,
		service: s.Service,
		clock:   opts.Clock,
	}
	// The secret never leaves airlock; the key id is sent in every
	// Authorization header and an error answer may quote it, and the
	// session token is sent as X-Amz-Security-Token.
	secrets := []string{secret, id}
	if token != "" {
		secrets = append(secrets, token)
	}
	return sg, secrets, nil
}

// sign signs req, whose body has the SHA-256 payloadHash, at the clock's
// time, replacing an earlier attempt's signature.
func (s *sigV4) sign(req *http.Request, payloadHash []byte) error {
	err := s.signer.SignRequest(&sigv4.SignRequestInput{
		Request:     req,
		PayloadHash: payloadHash,
		Credentials: s.creds,
		Service:     s.service,
		Region:      s.region,
		Time:        s.clock.Now().UTC(),
	})
	if err != nil {
		// The signer's errors name the request's parts, never the key.
		return fmt.Errorf("credential: aws_sigv4: sign the request: %w", err)
	}
	return nil
}

// payloadHash is the SHA-256 of a request body (of none, for a request
// without one).
func payloadHash(body []byte) []byte {
	h := sha256.Sum256(body)
	return h[:]
}
