package review

import (
	"encoding/json"
	"testing"

	"github.com/airlock-mcp/airlock/config"
)

func TestFormatMoney_ShowsTheCurrencyAndItsMinorUnits(t *testing.T) {
	minor := &config.MoneyConfig{CurrencyField: "currency", MinorUnits: true}
	fixed := &config.MoneyConfig{Currency: "EUR"}
	for _, c := range []struct {
		m        *config.MoneyConfig
		amount   any
		currency any
		want     string
	}{
		{minor, float64(22550), "EUR", "EUR 225.50"},
		{minor, float64(5), "EUR", "EUR 0.05"},
		{minor, float64(-123456789), "USD", "USD -1,234,567.89"},
		{minor, float64(22550), "JPY", "JPY 22,550"},
		{minor, float64(22550), "KWD", "KWD 22.550"},
		{minor, json.Number("100000000000000000001"), "EUR", "EUR 1,000,000,000,000,000,000.01"},
		{minor, float64(22550), nil, "22550 (currency unknown)"},
		{minor, float64(225.5), "EUR", "225.5 EUR minor units"},
		{fixed, float64(1999.5), "USD", "EUR 1,999.5"},
		{fixed, 0, nil, "EUR 0"},
	} {
		got, ok := FormatMoney(c.m, c.amount, c.currency)
		if !ok || got != c.want {
			t.Errorf("FormatMoney(%v, %v) = %q, %v; want %q", c.amount, c.currency, got, ok, c.want)
		}
	}
	for _, notNumber := range []any{nil, "12", true, map[string]any{}} {
		if got, ok := FormatMoney(fixed, notNumber, nil); ok {
			t.Errorf("FormatMoney(%v) = %q: a value that is not a number must be shown as it is", notNumber, got)
		}
	}
}
