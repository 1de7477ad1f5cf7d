package graph

// cursorTargetErrors is the cursor kind of a target's errors (TargetHistory.errors).
const cursorTargetErrors = "target-errors"
