package store

import (
	"context"
	"errors"
	"testing"
)

func TestResolvePrefix(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		s := b.open(t)
		ctx := context.Background()
		for _, id := range []string{"abc1", "abc2", "abd", "x_y", "x-y", "ab"} {
			putGrant(t, s, id, "", 10)
			seal(t, s, "sess-"+id, nil, 0, "t")
		}
		for _, tt := range []struct {
			prefix, want string
			err          error
		}{
			{"abc1", "abc1", nil},
			{"abd", "abd", nil},
			{"ab", "ab", nil}, // an exact id wins over the ids it prefixes
			{"abc", "", ErrAmbiguous},
			{"x_", "x_y", nil}, // '_' is a character, not a LIKE wildcard
			{"x-", "x-y", nil},
			{"x", "", ErrAmbiguous},
			{"zz", "", ErrNotFound},
			{"%", "", ErrNotFound},
		} {
			got, err := s.ResolveGrant(ctx, tt.prefix)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("ResolveGrant(%q) = %q, %v; want %q, %v", tt.prefix, got, err, tt.want, tt.err)
			}
			want := tt.want
			if want != "" {
				want = "sess-" + want
			}
			got, err = s.ResolveSession(ctx, "sess-"+tt.prefix)
			if got != want || !errors.Is(err, tt.err) {
				t.Errorf("ResolveSession(%q) = %q, %v; want %q, %v", "sess-"+tt.prefix, got, err, want, tt.err)
			}
		}
		if _, err := s.ResolveGrant(ctx, ""); err == nil {
			t.Error("empty prefix resolved")
		}
	})
}

func TestReplaceSetting(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		s := b.open(t)
		ctx := context.Background()
		for k, v := range map[string]string{"active": "g1", "active:s1": "g1", "active:s2": "g2", "activeX": "g1", "other": "g1"} {
			if err := s.SetSetting(ctx, k, v); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.ReplaceSetting(ctx, "active", "g1", "g3")
		if err != nil || n != 2 {
			t.Fatalf("replaced %d, %v; want 2", n, err)
		}
		for k, want := range map[string]string{"active": "g3", "active:s1": "g3", "active:s2": "g2", "activeX": "g1", "other": "g1"} {
			if got, err := s.Setting(ctx, k); got != want || err != nil {
				t.Errorf("%s = %q, %v; want %q", k, got, err, want)
			}
		}
	})
}
