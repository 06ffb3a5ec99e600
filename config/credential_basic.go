package config

// BasicConfig is HTTP Basic authentication from a user and a password, each
// read from its own environment variable or file.
type BasicConfig struct {
	User     SecretSource `yaml:"user"`
	Password SecretSource `yaml:"password"`
}

var basicKind = CredentialKind{
	Name:   FormBasic,
	keys:   []string{"basic"},
	chosen: func(c *CredentialConfig) bool { return c.Basic != nil },
	check: func(l *errList, c *CredentialConfig, p []string) {
		validateSecretSource(l, c.Basic.User, append(append([]string(nil), p...), "basic", "user"))
		validateSecretSource(l, c.Basic.Password, append(append([]string(nil), p...), "basic", "password"))
	},
	sources: func(c *CredentialConfig) []namedSource {
		return []namedSource{{"basic user", c.Basic.User}, {"basic password", c.Basic.Password}}
	},
}
