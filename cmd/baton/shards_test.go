package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// shardedCLIJob is a sharded job of 3 shards, 2 items each.
func shardedCLIJob() runner.Job {
	return runner.NewJob(runner.JobInfo{Name: "cli-crawl", Version: "1", Shards: &runner.Sharding{Count: 3}},
		func(ctx context.Context, run *runner.Run) error {
			shard, _ := run.Shard()
			if err := run.SetTotal(ctx, 2); err != nil {
				return err
			}
			for i := 1; i <= 2; i++ {
				item := runner.Item{Target: fmt.Sprintf("s%s-%d", shard.Key, i), Checkpoint: strconv.Itoa(i)}
				if err := run.Process(ctx, item, func(context.Context, *runner.Attempt) error { return nil }); err != nil {
					return err
				}
			}
			return nil
		})
}

// TestShardedRunCommands watches, shows and lists the shards of a sharded run, and reads and
// sets the job's cap on concurrent shards.
func TestShardedRunCommands(t *testing.T) {
	t.Parallel()
	ctx, _, tokens, srv := cliServerWith(t, func(c *runner.Config) { c.PoolSize = 3 }, shardedCLIJob())
	operator, _, err := httpapi.CreateToken(ctx, tokens, "cli-op", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	viewer, _, err := httpapi.CreateToken(ctx, tokens, "cli-viewer", "VIEWER")
	if err != nil {
		t.Fatal(err)
	}
	run := func(cmd func(context.Context, []string, io.Writer, io.Writer) error, token string, args ...string) (string, error) {
		var out bytes.Buffer
		err := cmd(ctx, append(args, "--url", srv.URL, "--token", token), &out, io.Discard)
		return out.String(), err
	}

	out, err := run(jobsCommand, operator, "start", "cli-crawl", "--watch")
	if err != nil {
		t.Fatalf("start --watch: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "SUCCEEDED") || !strings.Contains(last, "6/6") ||
		!strings.Contains(last, "3 shards: 0 running, 0 pending, 3 done") {
		t.Fatalf("watch's last line %q, want the run's summed progress and its shards all done", last)
	}

	out, err = run(runsCommand, operator, "show", "1")
	if err != nil {
		t.Fatalf("runs show: %v\n%s", err, out)
	}
	for _, want := range []string{"3 shards: 0 running, 0 pending, 3 done", "KEY", "HOLDER", "CHECKPOINT"} {
		if !strings.Contains(out, want) {
			t.Fatalf("runs show lacks %q:\n%s", want, out)
		}
	}
	for k := range 3 {
		if !strings.Contains(out, fmt.Sprintf("  %d    SUCCEEDED  -       2/2 (100%%)  2", k)) {
			t.Fatalf("runs show lacks shard %d SUCCEEDED:\n%s", k, out)
		}
	}

	out, err = run(runsCommand, operator, "show", "1", "--output", "json")
	if err != nil {
		t.Fatalf("runs show --output json: %v\n%s", err, out)
	}
	var shown runDetailJSON
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.ShardTotal == nil || *shown.ShardTotal != 3 || len(shown.Shards) != 3 {
		t.Fatalf("JSON run: shardTotal %v, %d shards:\n%s", shown.ShardTotal, len(shown.Shards), out)
	}
	for k, s := range shown.Shards {
		if s.Key != strconv.Itoa(k) || s.Status != "SUCCEEDED" || s.Checkpoint != "2" || s.Processed != 2 || s.Instance != nil {
			t.Fatalf("JSON shard %d: %+v", k, s)
		}
	}

	if out, err = run(jobsCommand, viewer, "sharding", "cli-crawl"); err != nil || !strings.Contains(out, "as many as there are free slots") {
		t.Fatalf("sharding: %v\n%s", err, out)
	}
	if out, err = run(jobsCommand, operator, "sharding", "cli-crawl", "--max-concurrent", "2"); err != nil || !strings.Contains(out, "at most 2") {
		t.Fatalf("sharding --max-concurrent 2: %v\n%s", err, out)
	}
	if _, err = run(jobsCommand, operator, "sharding", "cli-crawl", "--max-concurrent", "-1"); err == nil || !strings.Contains(err.Error(), "INVALID_INPUT") {
		t.Fatalf("sharding --max-concurrent -1: %v, want INVALID_INPUT", err)
	}
	if _, err = run(jobsCommand, viewer, "sharding", "cli-crawl", "--max-concurrent", "5"); err == nil || !strings.Contains(err.Error(), "FORBIDDEN") {
		t.Fatalf("a viewer's sharding --max-concurrent: %v, want FORBIDDEN", err)
	}
	if out, err = run(jobsCommand, viewer, "sharding", "cli-crawl", "--output", "json"); err != nil || strings.TrimSpace(out) != "{\n  \"job\": \"cli-crawl\",\n  \"maxConcurrentShards\": 2\n}" {
		t.Fatalf("sharding --output json after refusals: %v\n%s", err, out)
	}
}
