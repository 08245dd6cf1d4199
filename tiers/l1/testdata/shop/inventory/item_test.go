package inventory

import "testing"

func TestAddGet(t *testing.T) {
	s := New(Config{Limit: 2})
	if err := s.Add(Item{SKU: "a", Quantity: 2}); err != nil {
		t.Fatal(err)
	}
	it, err := s.Get("a")
	if err != nil || it.Quantity != 2 {
		t.Fatalf("%v %v", it, err)
	}
	if clamp(5, 0, 3) != 3 {
		t.Fatal("clamp")
	}
}
