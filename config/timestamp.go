package config

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Named timestamp layouts; anything else is a Go time layout.
const (
	LayoutRFC3339 = "rfc3339"
	LayoutUnix    = "unix"
	LayoutUnixMS  = "unix_ms"
)

// validLayout reports whether a configured layout is named or a Go layout
// that can write and read back a reference time.
func validLayout(l string) bool {
	switch l {
	case LayoutRFC3339, LayoutUnix, LayoutUnixMS:
		return true
	}
	ref := time.Date(2026, 12, 2, 16, 17, 14, 757000000, time.UTC)
	back, err := time.Parse(l, ref.Format(l))
	// A layout must at least carry the date and the time of day.
	return err == nil && back.Year() == 2026 && back.Month() == 12 && back.Day() == 2 && back.Hour() == 16 && back.Minute() == 17
}

// NormalizeTimestamp rewrites a value written in layout as RFC 3339 (UTC
// kept as Z, other offsets kept). ok is false when v is not such a value.
func NormalizeTimestamp(v any, layout string) (string, bool) {
	switch layout {
	case "", LayoutRFC3339:
		return "", false
	case LayoutUnix, LayoutUnixMS:
		var f float64
		switch x := v.(type) {
		case json.Number:
			n, err := x.Float64()
			if err != nil {
				return "", false
			}
			f = n
		case float64:
			f = x
		case string:
			n, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return "", false
			}
			f = n
		default:
			return "", false
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
			return "", false
		}
		var t time.Time
		if layout == LayoutUnix {
			sec, frac := math.Modf(f)
			t = time.Unix(int64(sec), int64(frac*1e9))
		} else {
			t = time.UnixMilli(int64(f))
		}
		return t.UTC().Format(time.RFC3339Nano), true
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return "", false // already RFC 3339
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return "", false
	}
	return t.Format(time.RFC3339Nano), true
}
