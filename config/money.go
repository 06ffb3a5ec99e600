package config

import (
	"fmt"
	"regexp"
	"slices"
)

// MoneyConfig says that a field is an amount of money, and in which
// currency: one currency for every record, or a field of the record that
// names it. Reviewers see such amounts with their currency (the review
// page, the manifest airlock approve prints).
type MoneyConfig struct {
	// Currency is an ISO 4217 code (EUR) when every amount is in it.
	Currency string `yaml:"currency"`
	// CurrencyField names the field that holds each record's ISO 4217
	// code; when the amount is a review field, this field must be one too.
	CurrencyField string `yaml:"currency_field"`
	// MinorUnits says that the amount counts the currency's minor unit
	// (cents): 22550 EUR is 225.50 EUR. The number of minor units per
	// currency follows ISO 4217 (JPY has none, KWD three).
	MinorUnits bool `yaml:"minor_units"`
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

func validateMoney(l *errList, r *ResourceConfig, fname string, p []string) {
	f := r.Fields[fname]
	m := f.Money
	if m == nil {
		return
	}
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	switch {
	case f.Type != "integer" && f.Type != "number":
		l.add("money is only for integer and number fields", p...)
	case m.MinorUnits && f.Type != "integer":
		l.add("an amount in minor units is an integer: declare the field's type integer", at("minor_units")...)
	}
	if (m.Currency == "") == (m.CurrencyField == "") {
		l.add("set exactly one of currency (an ISO 4217 code) or currency_field (the field that holds it)", p...)
		return
	}
	if m.Currency != "" && !currencyCode.MatchString(m.Currency) {
		l.add(fmt.Sprintf("currency %q is not an ISO 4217 code such as EUR", m.Currency), at("currency")...)
	}
	if m.CurrencyField == "" {
		return
	}
	cf, ok := r.Fields[m.CurrencyField]
	switch {
	case !ok:
		l.add(fmt.Sprintf("field %q is not declared", m.CurrencyField), at("currency_field")...)
	case cf == nil || cf.Type != "string":
		l.add(fmt.Sprintf("field %q holds a currency code, so its type is string", m.CurrencyField), at("currency_field")...)
	case cf.Sensitive:
		l.add(fmt.Sprintf("field %q is sensitive and cannot be shown beside the amount", m.CurrencyField), at("currency_field")...)
	case slices.Contains(r.ReviewFields, fname) && !slices.Contains(r.ReviewFields, m.CurrencyField):
		l.add(fmt.Sprintf("%s is a review field: add %q to review_fields too, so that reviewers see the currency", fname, m.CurrencyField), at("currency_field")...)
	}
}
