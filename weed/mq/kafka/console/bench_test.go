package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The console's pages with 1,000 topics and 1,000 groups (one committed
// offset each), over the in-memory storage: what the pages themselves
// cost. The e2e test times them against SeaweedFS.
func BenchmarkConsolePages(b *testing.B) {
	cn := startNode(b, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cn.kafka))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var names []string
	for i := range 1000 {
		names = append(names, fmt.Sprintf("bench-t-%04d", i))
	}
	for i := 0; i < len(names); i += 100 {
		if _, err := adm.CreateTopics(ctx, 1, 1, nil, names[i:i+100]...); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			os := kadm.Offsets{}
			os.Add(kadm.Offset{Topic: name, Partition: 0, At: 0, LeaderEpoch: -1})
			if _, err := adm.CommitOffsets(ctx, fmt.Sprintf("bench-g-%04d", i), os); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	br := newBrowser(b, cn.console)
	if code, _ := br.login("admin", "admin-secret"); code != 200 {
		b.Fatalf("login: %d", code)
	}
	for _, page := range []string{"/topics", "/groups", "/groups/bench-g-0001", "/topics/bench-t-0001"} {
		b.Run(strings.ReplaceAll(page, "/", "_"), func(b *testing.B) {
			for range b.N {
				if code, _ := br.get(page); code != http.StatusOK {
					b.Fatalf("%s: %d", page, code)
				}
			}
		})
	}
	// The lists' first view in a session measures every group's lag.
	for _, page := range []string{"/topics", "/groups"} {
		b.Run("first"+strings.ReplaceAll(page, "/", "_"), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				fresh := newBrowser(b, cn.console)
				if code, _ := fresh.login("admin", "admin-secret"); code != 200 {
					b.Fatalf("login: %d", code)
				}
				b.StartTimer()
				if code, _ := fresh.get(page); code != http.StatusOK {
					b.Fatalf("%s: %d", page, code)
				}
			}
		})
	}
}
