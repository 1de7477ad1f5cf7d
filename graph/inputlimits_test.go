package graph_test

import (
	"strings"
	"testing"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// Every text input of every mutation has a limit: over it, the whole operation is refused with
// INPUT_TOO_LONG naming the field, nothing is written, and the audit row records the field and
// its length, not the value. At the limit (counted in characters, not bytes) it passes on to
// the resolver.
func TestMutationInputLengthLimits(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "sync", n: 1}}})
	op := b.token(model.RoleOperator)
	run := i.startJob(t, op, "sync")
	i.waitRunStatus(t, op, run, "SUCCEEDED")
	huge := strings.Repeat("x", 240<<10)

	cases := []struct {
		name, query string
		vars        map[string]any
		field       string
		limit       int
	}{
		{"a 240 KB replay reason", `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { userErrors { code } } }`,
			map[string]any{"in": map[string]any{"runId": run, "scope": "FULL", "reason": huge}}, "input.reason", graph.MaxTextLength},
		{"a compensation reference", `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { userErrors { code } } }`,
			map[string]any{"in": map[string]any{"runId": run, "scope": "FULL", "reason": "r", "compensationRef": strings.Repeat("r", graph.MaxRefLength+1)}},
			"input.compensationRef", graph.MaxRefLength},
		{"a job name", `mutation($n: String!) { startJob(input: {name: $n}) { userErrors { code } } }`,
			map[string]any{"n": strings.Repeat("n", graph.MaxIDLength+1)}, "input.name", graph.MaxIDLength},
		{"a cron expression, inline", `mutation { updateJobSchedule(input: {name: "sync", cron: "` + strings.Repeat("*", graph.MaxIDLength+1) + `"}) { userErrors { code } } }`,
			nil, "input.cron", graph.MaxIDLength},
		{"a resolution note", `mutation($in: ResolveAmbiguousInput!) { resolveAmbiguous(input: $in) { userErrors { code } } }`,
			map[string]any{"in": map[string]any{"entryId": "x", "resolution": "NOT_APPLIED", "note": strings.Repeat("é", graph.MaxTextLength+1)}},
			"input.note", graph.MaxTextLength},
		{"an approval note", `mutation { rejectReplay(input: {requestId: "x", note: "` + strings.Repeat("n", graph.MaxTextLength+1) + `"}) { userErrors { code } } }`,
			nil, "input.note", graph.MaxTextLength},
		{"a run id", `mutation($id: ID!) { cancelRun(input: {runId: $id}) { userErrors { code } } }`,
			map[string]any{"id": strings.Repeat("1", graph.MaxIDLength+1)}, "input.runId", graph.MaxIDLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := i.post(t, op, c.query, c.vars)
			if resp.code() != graph.CodeInputTooLong {
				t.Fatalf("code %q (%+v), want %s", resp.code(), resp.Errors, graph.CodeInputTooLong)
			}
			ext := resp.Errors[0].Extensions
			if ext["field"] != c.field || ext["limit"] != float64(c.limit) || !strings.Contains(resp.Errors[0].Message, c.field) {
				t.Fatalf("error %+v, want field %s and limit %d named", resp.Errors[0], c.field, c.limit)
			}
		})
	}
	if n := b.count(`SELECT count(*) FROM replay_requests`); n != 0 {
		t.Fatalf("%d replay requests recorded from refused input", n)
	}
	if n := b.count(`SELECT count(*) FROM job_runs`); n != 1 {
		t.Fatalf("%d runs, want only the first: a refused start started one", n)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE outcome = 'INPUT_TOO_LONG'`); n != len(cases) {
		t.Fatalf("%d INPUT_TOO_LONG audit rows, want %d", n, len(cases))
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE outcome = 'INPUT_TOO_LONG' AND length(arguments::text) > 200`); n != 0 {
		t.Fatalf("%d audit rows store the refused value", n)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'requestReplay' AND outcome = 'INPUT_TOO_LONG' AND arguments->>'field' = 'input.reason'`); n != 1 {
		t.Fatalf("the refused reason's audit row does not name the field")
	}

	// At the limit, in characters that take two bytes each, the value reaches the resolver.
	var ok struct {
		RequestReplay struct {
			ReplayRequest *struct{ Reason string }
			UserErrors    []userError
		}
	}
	i.post(t, op, `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { replayRequest { reason } userErrors { code message } } }`,
		map[string]any{"in": map[string]any{"runId": run, "scope": "FULL", "reason": strings.Repeat("é", graph.MaxTextLength)}}).decode(t, &ok)
	if ok.RequestReplay.ReplayRequest == nil || len([]rune(ok.RequestReplay.ReplayRequest.Reason)) != graph.MaxTextLength {
		t.Fatalf("a reason of exactly %d characters: %+v", graph.MaxTextLength, ok.RequestReplay.UserErrors)
	}
	// Queries are not held to these limits (their arguments have their own checks).
	var q struct{ Job *struct{ Name string } }
	i.post(t, op, `query($n: String!) { job(name: $n) { name } }`, map[string]any{"n": strings.Repeat("q", graph.MaxIDLength+1)}).decode(t, &q)
	if q.Job != nil {
		t.Fatalf("job of an unknown long name: %+v", q.Job)
	}
}
