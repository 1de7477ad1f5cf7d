package httpapi

import "testing"

func TestConnLimiter(t *testing.T) {
	t.Parallel()
	c := &connLimiter{max: 2, n: map[int64]int{}}
	r1, ok1 := c.acquire(7)
	_, ok2 := c.acquire(7)
	_, ok3 := c.acquire(7)
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("acquire: %v %v %v", ok1, ok2, ok3)
	}
	r1()
	r1() // idempotent
	if _, ok := c.acquire(7); !ok {
		t.Fatal("a released slot is free again")
	}
	if _, ok := c.acquire(7); ok {
		t.Fatal("a double release freed two slots")
	}
}
