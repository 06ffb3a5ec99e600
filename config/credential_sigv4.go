package config

import (
	"fmt"
	"regexp"
)

// FormSigV4 is AWS Signature Version 4: every request signed with an
// access key, for AWS's JSON APIs and those that speak them.
const FormSigV4 = "aws_sigv4"

// SigV4Config signs every request with AWS Signature Version 4: the
// method, path, query, host, date, every X-Amz-* header (the operation in
// X-Amz-Target among them) and the SHA-256 of the body. The access key,
// its secret and a session token (temporary credentials) are each read
// from an environment variable or a file; the region and the service
// (dynamodb, es, execute-api) are part of what is signed.
type SigV4Config struct {
	AccessKeyID     SecretSource  `yaml:"access_key_id"`
	SecretAccessKey SecretSource  `yaml:"secret_access_key"`
	SessionToken    *SecretSource `yaml:"session_token"`
	Region          string        `yaml:"region"`
	Service         string        `yaml:"service"`
}

var sigV4Kind = CredentialKind{
	Name:   FormSigV4,
	keys:   []string{"aws_sigv4"},
	chosen: func(c *CredentialConfig) bool { return c.SigV4 != nil },
	check: func(l *errList, c *CredentialConfig, p []string) {
		validateSigV4(l, c.SigV4, append(append([]string(nil), p...), "aws_sigv4"))
	},
	sources: func(c *CredentialConfig) []namedSource { return sigV4Sources(c.SigV4) },
	summary: func(c *CredentialConfig, parts []string) string {
		return fmt.Sprintf("AWS Signature Version 4 for %s in %s, %s", c.SigV4.Service, c.SigV4.Region, joinParts(parts))
	},
}

// awsName is a region or a service name as AWS writes them.
var awsName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

func validateSigV4(l *errList, s *SigV4Config, p []string) {
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	for _, sec := range []struct {
		key string
		src SecretSource
	}{{"access_key_id", s.AccessKeyID}, {"secret_access_key", s.SecretAccessKey}} {
		if !sec.src.set() && len(sec.src.unknown) == 0 {
			l.add("required: {env: VARIABLE} or {file: PATH}", at(sec.key)...)
			continue
		}
		validateSecretSource(l, sec.src, at(sec.key))
	}
	if s.SessionToken != nil {
		validateSecretSource(l, *s.SessionToken, at("session_token"))
	}
	switch {
	case s.Region == "":
		l.add("required: the region requests are signed for, such as us-east-1", at("region")...)
	case !awsName.MatchString(s.Region):
		l.add("must be a region name such as us-east-1", at("region")...)
	}
	switch {
	case s.Service == "":
		l.add("required: the signing name of the service, such as dynamodb", at("service")...)
	case !awsName.MatchString(s.Service):
		l.add("must be a service's signing name such as dynamodb", at("service")...)
	}
}

// sigV4Sources are the secrets a SigV4 credential reads, in order.
func sigV4Sources(s *SigV4Config) []namedSource {
	out := []namedSource{{"access key id", s.AccessKeyID}, {"secret access key", s.SecretAccessKey}}
	if s.SessionToken != nil {
		out = append(out, namedSource{"session token", *s.SessionToken})
	}
	return out
}
