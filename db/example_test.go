package db_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"agentgw/db"
)

// The life of a manifest: register a version, activate it, list the
// directory page by page.
func Example() {
	dir, err := os.MkdirTemp("", "agentgw-db-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := db.Open(ctx, filepath.Join(dir, "agentgw.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	for _, name := range []string{"weather", "echo", "translate"} {
		canonical := []byte(`{"name":"` + name + `","version":"1.0.0"}`)
		v := db.Version{
			JID:       name + "@agents.example",
			Version:   "1.0.0",
			Hash:      sha256.Sum256(canonical),
			Canonical: canonical,
			Name:      name,
		}
		if _, err := s.RegisterVersion(ctx, v, db.OriginSelf); err != nil {
			log.Fatal(err)
		}
		if err := s.Activate(ctx, v.JID, v.Version, &v.Hash); err != nil {
			log.Fatal(err)
		}
	}

	// Version 1.0.0 of weather is immutable.
	changed := []byte(`{"name":"weather","version":"1.0.0","title":"Weather"}`)
	_, err = s.RegisterVersion(ctx, db.Version{
		JID: "weather@agents.example", Version: "1.0.0",
		Hash: sha256.Sum256(changed), Canonical: changed, Name: "weather",
	}, db.OriginSelf)
	fmt.Println(errors.Is(err, db.ErrConflict))

	// Two items per page, continuing after the last item seen.
	page, _ := s.Directory(ctx, db.Scope{All: true}, db.Page{Max: 2})
	fmt.Println(page.Count, page.Items)
	last := page.Items[len(page.Items)-1].JID
	page, _ = s.Directory(ctx, db.Scope{All: true}, db.Page{Max: 2, After: &last})
	fmt.Println(page.Count, page.Items)
	// Output:
	// true
	// 3 [{echo@agents.example echo} {translate@agents.example translate}]
	// 3 [{weather@agents.example weather}]
}
