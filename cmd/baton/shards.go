package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// A sharded run's shards, as `runs show`, `runs watch` and `jobs … --watch` show them, and the
// job's cap on concurrent shards (`jobs sharding`).

// shardFields are the fields of a run's shards that show and watch ask for (only those: a
// list of runs would multiply them).
const shardFields = ` shardTotal shards { key status instance processed total percent checkpoint leaseAgeSeconds attempt }`

// wireShard is one shard of a sharded run as the API sends it (shardFields).
type wireShard struct {
	Key             string   `json:"key"`
	Status          string   `json:"status"`
	Instance        *string  `json:"instance"`
	Processed       int64    `json:"processed"`
	Total           *int64   `json:"total"`
	Percent         *float64 `json:"percent"`
	Checkpoint      string   `json:"checkpoint"`
	LeaseAgeSeconds *float64 `json:"leaseAgeSeconds"`
	Attempt         int      `json:"attempt"`
}

// shardJSON is a shard in --output json (runs show, watch lines).
type shardJSON struct {
	Key             string   `json:"key"`
	Status          string   `json:"status"`
	Instance        *string  `json:"instance"`
	Processed       int64    `json:"processed"`
	Total           *int64   `json:"total"`
	Percent         *float64 `json:"percent"`
	Checkpoint      string   `json:"checkpoint"`
	LeaseAgeSeconds *float64 `json:"leaseAgeSeconds"`
	Attempt         int      `json:"attempt"`
}

func shardsOut(shards []wireShard) []shardJSON {
	if len(shards) == 0 {
		return nil
	}
	out := make([]shardJSON, len(shards))
	for i, s := range shards {
		out[i] = shardJSON(s)
	}
	return out
}

// shardsText sums a sharded run's shards up by where they are: "16 shards: 3 running,
// 2 pending, 11 done" (done: SUCCEEDED; any other end is named); "" for a run without shards.
func shardsText(r *wireRun) string {
	if len(r.Shards) == 0 {
		return ""
	}
	counts := map[string]int{}
	for _, s := range r.Shards {
		counts[s.Status]++
	}
	parts := []string{
		fmt.Sprintf("%d running", counts["RUNNING"]+counts["STARTING"]),
		fmt.Sprintf("%d pending", counts["PENDING"]),
		fmt.Sprintf("%d done", counts["SUCCEEDED"]),
	}
	for _, st := range []string{"FAILED", "CANCELLED", "PAUSED"} {
		if n := counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(st)))
		}
	}
	return fmt.Sprintf("%d shards: %s", len(r.Shards), strings.Join(parts, ", "))
}

// printShards lists a run's shards for runs show: key, status, holder, progress, checkpoint.
func printShards(stdout io.Writer, shards []wireShard) error {
	if len(shards) == 0 {
		return nil
	}
	fmt.Fprintln(stdout, "\nshards:")
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KEY\tSTATUS\tHOLDER\tPROGRESS\tCHECKPOINT\tLEASE AGE")
	for _, s := range shards {
		holder, age := "-", "-"
		if s.Instance != nil {
			holder = *s.Instance
		}
		if s.LeaseAgeSeconds != nil {
			age = fmt.Sprintf("%.0fs", *s.LeaseAgeSeconds)
		}
		progress := fmt.Sprintf("%d", s.Processed)
		if s.Total != nil {
			progress = fmt.Sprintf("%d/%d", s.Processed, *s.Total)
		}
		if s.Percent != nil {
			progress += fmt.Sprintf(" (%.0f%%)", *s.Percent)
		}
		status := s.Status
		if s.Attempt > 0 {
			status += fmt.Sprintf(" (attempt %d)", s.Attempt+1)
		}
		cp := s.Checkpoint
		if cp == "" {
			cp = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", s.Key, status, holder, progress, cp, age)
	}
	return tw.Flush()
}

// shardingJSON is `jobs sharding --output json`.
type shardingJSON struct {
	Job                 string `json:"job"`
	MaxConcurrentShards int    `json:"maxConcurrentShards"`
}

// jobSharding prints job name's cap on concurrent shards after setting it to n (nil: no
// change).
func (c *apiClient) jobSharding(ctx context.Context, name string, n *int, asJSON bool, stdout io.Writer) error {
	type job struct {
		MaxConcurrentShards int `json:"maxConcurrentShards"`
	}
	var got int
	if n == nil {
		var data struct {
			Job *job `json:"job"`
		}
		if err := c.do(ctx, `query JobShards($n: String!) { job(name: $n) { maxConcurrentShards } }`, map[string]any{"n": name}, &data); err != nil {
			return err
		}
		if data.Job == nil {
			return fmt.Errorf("jobs sharding %s: %w", name, &apiError{Code: "NOT_FOUND", Message: "no job of that name"})
		}
		got = data.Job.MaxConcurrentShards
	} else {
		var data struct {
			UpdateJobSharding struct {
				Job        *job      `json:"job"`
				UserErrors []userErr `json:"userErrors"`
			} `json:"updateJobSharding"`
		}
		err := c.do(ctx, `mutation UpdateJobSharding($in: UpdateJobShardingInput!) { updateJobSharding(input: $in) {
			job { maxConcurrentShards } userErrors { code message field } } }`,
			map[string]any{"in": map[string]any{"job": name, "maxConcurrentShards": *n}}, &data)
		if err != nil {
			return err
		}
		if err := userErrs(data.UpdateJobSharding.UserErrors); err != nil {
			return fmt.Errorf("jobs sharding %s: %w", name, err)
		}
		got = data.UpdateJobSharding.Job.MaxConcurrentShards
	}
	if asJSON {
		return writeJSON(stdout, shardingJSON{Job: name, MaxConcurrentShards: got})
	}
	if got == 0 {
		fmt.Fprintf(stdout, "%s: shards of a run at once: as many as there are free slots\n", name)
	} else {
		fmt.Fprintf(stdout, "%s: shards of a run at once: at most %d\n", name, got)
	}
	return nil
}
