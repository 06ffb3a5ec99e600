package review

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config"
)

// currencyExponent lists the ISO 4217 currencies whose minor unit is not a
// hundredth: every other code is taken to have two decimals.
var currencyExponent = map[string]int{
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0,
	"RWF": 0, "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	"BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
	"CLF": 4, "UYW": 4,
}

func exponent(currency string) int {
	if e, ok := currencyExponent[currency]; ok {
		return e
	}
	return 2
}

// FormatMoney renders an amount of a money field with its currency:
// "EUR 225.50" for 22550 in minor units. currency is the record's currency
// (ignored when the configuration names one). It returns ok false when the
// value is not a number; an amount without a currency is the number marked
// "(currency unknown)". The value itself is never changed: only shown.
func FormatMoney(m *config.MoneyConfig, amount any, currency any) (string, bool) {
	num, ok := decimal(amount)
	if !ok {
		return "", false
	}
	code := m.Currency
	if code == "" {
		code, _ = currency.(string)
	}
	if code == "" {
		return num + " (currency unknown)", true
	}
	if m.MinorUnits {
		if scaled, ok := shift(num, exponent(code)); ok {
			num = scaled
		} else {
			return num + " " + code + " minor units", true
		}
	}
	return code + " " + group(num), true
}

// decimal is a number's exact decimal text.
func decimal(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		if _, ok := new(big.Float).SetString(string(x)); !ok {
			return "", false
		}
		return string(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

// shift divides an integer's text by 10^exp exactly: "22550", 2 is
// "225.50". A number with a fraction or an exponent is not shifted.
func shift(num string, exp int) (string, bool) {
	neg := strings.HasPrefix(num, "-")
	digits := strings.TrimPrefix(num, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	if exp == 0 {
		return num, true
	}
	for len(digits) <= exp {
		digits = "0" + digits
	}
	out := digits[:len(digits)-exp] + "." + digits[len(digits)-exp:]
	if neg {
		out = "-" + out
	}
	return out, true
}

// group separates the thousands of a decimal's integer part with commas.
func group(num string) string {
	sign := ""
	if strings.HasPrefix(num, "-") {
		sign, num = "-", num[1:]
	}
	intPart, frac, hasFrac := strings.Cut(num, ".")
	if strings.ContainsAny(intPart, "eE") {
		return sign + num
	}
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}
