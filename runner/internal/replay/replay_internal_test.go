package replay

import (
	"testing"

	bt "github.com/baton-run/baton/runner/batontype"
)

func TestJudgeDownstream(t *testing.T) {
	t.Parallel()
	limit := []DownstreamLimit{{Name: "downstream error rate", Threshold: 0.05, MinCalls: 100}}
	for _, tc := range []struct {
		name    string
		rate    float64
		calls   int64
		verdict bt.Verdict
	}{
		{"too few calls for a verdict", 0.5, 99, bt.VerdictOK},
		{"under the threshold", 0.05, 1000, bt.VerdictOK},
		{"over the threshold", 0.051, 1000, bt.VerdictBlock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &bt.Preflight{DownstreamErrorRate: tc.rate}
			judgeDownstream(p, limit, tc.calls)
			if len(p.Checks) != 1 || p.Checks[0].Verdict != tc.verdict || p.Blocked != (tc.verdict == bt.VerdictBlock) {
				t.Fatalf("checks %+v, blocked %v; want one check %s", p.Checks, p.Blocked, tc.verdict)
			}
		})
	}
}

func TestIsRequester(t *testing.T) {
	t.Parallel()
	tok := int64(7)
	byToken := &bt.ReplayRequest{RequestedBy: "alice", RequestedByTokenID: &tok}
	byCode := &bt.ReplayRequest{RequestedBy: "tool"}
	for _, tc := range []struct {
		name string
		req  *bt.ReplayRequest
		by   Actor
		want bool
	}{
		{"same token", byToken, Actor{Name: "alice", TokenID: 7}, true},
		{"another token", byToken, Actor{Name: "bob", TokenID: 8}, false},
		{"code speaking as the token's name", byToken, Actor{Name: "alice"}, true},
		{"code with the requester's name", byCode, Actor{Name: "tool"}, true},
		{"a token after code", byCode, Actor{Name: "bob", TokenID: 8}, false},
		{"no one is system", &bt.ReplayRequest{RequestedBy: "system"}, Actor{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isRequester(tc.req, tc.by); got != tc.want {
				t.Fatalf("isRequester = %v, want %v", got, tc.want)
			}
		})
	}
}
