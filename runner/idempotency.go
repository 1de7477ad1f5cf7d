package runner

import "github.com/baton-run/baton/runner/internal/pipeline"

// IdempotencyKey returns the stable key of (job, generation, target, step): the same on every
// attempt and every run of the generation, different across generations.
func IdempotencyKey(job string, gen int64, target, step string) string {
	return pipeline.IdempotencyKey(job, gen, target, step)
}

// maskEvidence keeps a hint of an evidence ref and a digest to match it by, never the value.
func maskEvidence(ref string) string { return pipeline.MaskEvidence(ref) }
