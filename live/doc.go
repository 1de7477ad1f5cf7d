// Package live delivers Baton's live events to subscribers in this process: it publishes every
// change of a run or a reconcile request through the pubsub Publisher (NewEventPublisher, the
// runner's event sink), feeds subscribers from the pubsub Hub or, without one, from a poller
// (Feed), follows one run or request to its final state and the runs of a job as they change
// (Streams), shares re-reads of the database among subscribers (Flight), and fans raised
// alarms out (AlertWatcher).
//
// Subscriptions follow one pattern: subscribe to the feed first (so nothing published after
// the snapshot is missed), read a snapshot from the database, send it, then apply events. A
// Resync from the feed (Redis reconnected, the subscriber fell behind, or a poll tick) means
// re-reading the database. The goroutine that sends on a stream's channel owns it: it closes
// it when it returns, and every send also waits on ctx.Done, so an abandoned subscription
// never leaks a goroutine.
//
// The GraphQL subscriptions of package graph are its consumers; it knows nothing of GraphQL.
package live
