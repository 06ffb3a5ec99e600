package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
)

// BenchmarkCommitFlush measures what one durable commit costs on this
// server, the floor under any journal that makes an intent durable before
// its write is sent: b.N single-row INSERTs, each its own transaction, on
// one connection. commit-ms is one commit with the server's own
// synchronous_commit (on: the commit waits for its WAL flush);
// no-flush-ms the same commit with synchronous_commit off in the session
// (nothing waits for the disk: the round trip and the server's work);
// flush-ms their difference, what the disk adds to each commit.
func BenchmarkCommitFlush(b *testing.B) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.Database(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE TABLE flush (id bigserial PRIMARY KEY, at timestamptz NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	insert := func(n int) time.Duration {
		start := time.Now()
		for range n {
			if _, err := conn.Exec(ctx, `INSERT INTO flush (at) VALUES (now())`); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	const each = 200 // commits per sample; both kinds alternate
	var synced, async time.Duration
	var n int
	for b.Loop() {
		synced += insert(each)
		if _, err := conn.Exec(ctx, `SET synchronous_commit = off`); err != nil {
			b.Fatal(err)
		}
		async += insert(each)
		if _, err := conn.Exec(ctx, `RESET synchronous_commit`); err != nil {
			b.Fatal(err)
		}
		n += each
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
	b.ReportMetric(ms(synced), "commit-ms")
	b.ReportMetric(ms(async), "no-flush-ms")
	b.ReportMetric(ms(synced-async), "flush-ms")
}
