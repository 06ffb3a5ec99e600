package config

import (
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// withFields is configtest.MinimalUpstream and configtest.MinimalResource (lines 1-12) with more
// lines after them: the first added line is line 13.
func withFields(lines ...string) []byte {
	return configtest.Lines(append(append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...), lines...)...)
}

func TestParseConfig_MoneyFieldsNameTheirCurrency(t *testing.T) {
	for _, ok := range [][]byte{
		withFields("      amount: {type: integer, money: {currency_field: currency, minor_units: true}}", "      currency: {type: string}",
			"    review_fields: [id, amount, currency]"),
		withFields("      price: {type: number, money: {currency: EUR}}"),
	} {
		if _, err := Parse(ok); err != nil {
			t.Errorf("refused:\n%s\n%v", ok, err)
		}
	}
	for _, tc := range []struct {
		name string
		yaml []byte
		want []wantErr
	}{
		{"money on a string", withFields("      amount: {type: string, money: {currency: EUR}}"),
			[]wantErr{{13, "resources.items.fields.amount.money", "money is only for integer and number fields"}}},
		{"minor units of a number", withFields("      amount: {type: number, money: {currency: EUR, minor_units: true}}"),
			[]wantErr{{13, "resources.items.fields.amount.money.minor_units", "an amount in minor units is an integer"}}},
		{"neither currency nor its field", withFields("      amount: {type: integer, money: {minor_units: true}}"),
			[]wantErr{{13, "resources.items.fields.amount.money", "set exactly one of currency"}}},
		{"both currency and its field", withFields("      amount: {type: integer, money: {currency: EUR, currency_field: id}}"),
			[]wantErr{{13, "resources.items.fields.amount.money", "set exactly one of currency"}}},
		{"a currency that is not a code", withFields("      amount: {type: integer, money: {currency: euro}}"),
			[]wantErr{{13, "resources.items.fields.amount.money.currency", `currency "euro" is not an ISO 4217 code`}}},
		{"an undeclared currency field", withFields("      amount: {type: integer, money: {currency_field: cur}}"),
			[]wantErr{{13, "resources.items.fields.amount.money.currency_field", `field "cur" is not declared`}}},
		{"a currency field that is not a string", withFields("      amount: {type: integer, money: {currency_field: amount}}"),
			[]wantErr{{13, "resources.items.fields.amount.money.currency_field", `field "amount" holds a currency code, so its type is string`}}},
		{"a reviewed amount without its currency", withFields(
			"      amount: {type: integer, money: {currency_field: currency}}", // 13
			"      currency: {type: string}",                                   // 14
			"    review_fields: [id, amount]",                                  // 15
		), []wantErr{{13, "resources.items.fields.amount.money.currency_field", `add "currency" to review_fields too`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, tc.yaml), tc.want)
		})
	}
}
