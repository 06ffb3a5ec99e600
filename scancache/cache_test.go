package scancache

import (
	"encoding/json"
	"testing"
)

// An item is budgeted as it leaves airlock: an id beyond 2^53 travels as
// a string, two quotes longer in the structured content and four in the
// escaped text.
func TestWireCost_CountsTheItemAsItLeaves(t *testing.T) {
	asNumber := WireCost(json.RawMessage(`{"id":9007199254740993}`))
	asString := WireCost(json.RawMessage(`{"id":"9007199254740993"}`))
	if asNumber != asString {
		t.Errorf("WireCost with the id as a number = %d, as the string it leaves as = %d", asNumber, asString)
	}
}
