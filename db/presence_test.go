package db_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"agentgw/db"
)

func TestPresenceSubscriptions(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	const ep = "weather@agents.example"

	if _, err := s.Subscribe(ctx, ep, "alice@example.com"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("Subscribe to unknown endpoint: %v, want ErrNotFound", err)
	}
	// Subscriptions do not need the endpoint to be active.
	mustRegister(t, s, manifest(ep, "1", "weather", ""))

	for _, step := range []struct {
		sub  string
		want bool
	}{
		{"bob@example.com", true},
		{"alice@example.com", true},
		{"bob@example.com", false},
		{"Alice@example.com", true}, // octetwise distinct
	} {
		created, err := s.Subscribe(ctx, ep, step.sub)
		if err != nil || created != step.want {
			t.Errorf("Subscribe(%s) = %v, %v; want %v, nil", step.sub, created, err, step.want)
		}
	}
	subs, err := s.Subscribers(ctx, ep)
	if want := []string{"Alice@example.com", "alice@example.com", "bob@example.com"}; err != nil || !slices.Equal(subs, want) {
		t.Errorf("Subscribers = %q, %v; want %q", subs, err, want)
	}

	for _, step := range []struct {
		ep, sub string
		want    bool
	}{
		{ep, "bob@example.com", true},
		{ep, "bob@example.com", false},
		{ep, "carol@example.com", false},
		{"nobody@agents.example", "alice@example.com", false},
	} {
		removed, err := s.Unsubscribe(ctx, step.ep, step.sub)
		if err != nil || removed != step.want {
			t.Errorf("Unsubscribe(%s, %s) = %v, %v; want %v, nil", step.ep, step.sub, removed, err, step.want)
		}
	}
	subs, err = s.Subscribers(ctx, ep)
	if want := []string{"Alice@example.com", "alice@example.com"}; err != nil || !slices.Equal(subs, want) {
		t.Errorf("Subscribers after Unsubscribe = %q, %v; want %q", subs, err, want)
	}
	if subs, err := s.Subscribers(ctx, "nobody@agents.example"); err != nil || len(subs) != 0 {
		t.Errorf("Subscribers of unknown endpoint = %q, %v; want none", subs, err)
	}
	if _, err := s.Subscribe(ctx, ep, ""); err == nil {
		t.Error("Subscribe with an empty subscriber succeeded")
	}
}

func TestActiveSubscriptions(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	const a, b, c = "a@agents.example", "b@agents.example", "c@agents.example"
	for _, ep := range []string{a, b, c} {
		mustRegister(t, s, manifest(ep, "1", "n", ""))
	}
	mustActivate(t, s, a, "1")
	mustActivate(t, s, c, "1")
	for _, sub := range [][2]string{{a, "zed@example.com"}, {a, "amy@example.com"}, {b, "amy@example.com"}} {
		if _, err := s.Subscribe(ctx, sub[0], sub[1]); err != nil {
			t.Fatal(err)
		}
	}
	// b is inactive and c has no subscribers: neither is listed.
	got, err := s.ActiveSubscriptions(ctx)
	if want := []string{"amy@example.com", "zed@example.com"}; err != nil || len(got) != 1 || !slices.Equal(got[a], want) {
		t.Fatalf("ActiveSubscriptions = %q, %v; want only %s: %q", got, err, a, want)
	}
	for _, q := range []struct {
		ep, sub string
		want    bool
	}{
		{a, "amy@example.com", true},
		{b, "amy@example.com", true}, // inactive endpoints keep their subscriptions
		{c, "amy@example.com", false},
		{"nobody@agents.example", "amy@example.com", false},
	} {
		if ok, err := s.Subscribed(ctx, q.ep, q.sub); err != nil || ok != q.want {
			t.Errorf("Subscribed(%s, %s) = %v, %v; want %v", q.ep, q.sub, ok, err, q.want)
		}
	}
	if err := s.Deactivate(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ActiveSubscriptions(ctx); err != nil || len(got) != 0 {
		t.Errorf("after deactivation: %q, %v", got, err)
	}
}
