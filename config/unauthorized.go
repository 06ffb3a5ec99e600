package config

import (
	"net/http"
	"strconv"
)

// validateUnauthorized checks the declared authentication failures: a
// refusal's status other than 401 (always one), the body member that
// names the failure (a whole 400 would read every malformed request as a
// refused credential); validateOverlaps refuses one a rate limit or a
// conflict also matches.
func validateUnauthorized(l *errList, u *UpstreamConfig, at func(string) []string) {
	for i, t := range u.Unauthorized {
		p := append(at("unauthorized"), strconv.Itoa(i))
		switch {
		case t.Status == http.StatusUnauthorized:
			l.add("401 is always an authentication failure; declare other statuses", append(p, "status")...)
		case t.Status < 400 || t.Status > 499:
			l.add("required: a refusal's status (400 to 499)", append(p, "status")...)
		}
		if t.Member == "" {
			l.add("required: the body member that names the failure (__type)", append(p, "member")...)
		}
		validateMatch(l, t, p)
	}
}
