package config

import (
	"fmt"
	"strconv"
	"strings"
)

// declaredAnswers are the kinds of error answers an upstream declares, in
// the order they are reported: a later kind's entry that overlaps an
// earlier kind's is the one refused.
var declaredAnswers = []struct {
	key  string
	list func(*UpstreamConfig) []ThrottlingConfig
}{
	{"throttling", func(u *UpstreamConfig) []ThrottlingConfig { return u.Throttling }},
	{"conflicts", func(u *UpstreamConfig) []ThrottlingConfig { return u.Conflicts }},
	{"unauthorized", func(u *UpstreamConfig) []ThrottlingConfig { return u.Unauthorized }},
}

// validateOverlaps refuses two declarations of different kinds that one
// answer can match: it would be read as whichever kind is tested first (a
// refused credential retried as a rate limit). It mirrors the matcher
// (transport's answerMatches): the same status, and either one names no
// member (it matches every answer of that status), or both name the same
// member and one's text ends with the other's (a value ending with the
// longer ends with the shorter).
func validateOverlaps(l *errList, u *UpstreamConfig, at func(string) []string) {
	for bi, b := range declaredAnswers {
		for j, t := range b.list(u) {
			for _, a := range declaredAnswers[:bi] {
				for i, o := range a.list(u) {
					if !answersOverlap(o, t) {
						continue
					}
					l.add(fmt.Sprintf("overlaps %s.%d (%s): an answer (%s) matches both; make one text no suffix of the other",
						a.key, i, describeAnswer(o), overlapExample(o, t)), append(at(b.key), strconv.Itoa(j), "match")...)
				}
			}
		}
	}
}

// answersOverlap reports whether some answer matches both declarations.
func answersOverlap(a, b ThrottlingConfig) bool {
	if a.Status != b.Status {
		return false
	}
	if a.Member == "" || b.Member == "" {
		return true
	}
	return a.Member == b.Member && (strings.HasSuffix(a.Match, b.Match) || strings.HasSuffix(b.Match, a.Match))
}

func describeAnswer(t ThrottlingConfig) string {
	if t.Member == "" {
		return fmt.Sprintf("every %d", t.Status)
	}
	return fmt.Sprintf("%d, %s ending %q", t.Status, t.Member, t.Match)
}

// overlapExample names an answer both declarations match.
func overlapExample(a, b ThrottlingConfig) string {
	switch {
	case a.Member == "" && b.Member == "":
		return fmt.Sprintf("any %d", a.Status)
	case a.Member == "":
		return describeAnswer(b)
	case b.Member == "":
		return describeAnswer(a)
	}
	long := a.Match
	if len(b.Match) > len(long) {
		long = b.Match
	}
	return fmt.Sprintf("%d, %s ending %q", a.Status, a.Member, long)
}
