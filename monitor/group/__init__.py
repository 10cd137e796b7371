"""One decision for the consumer group: the member that owns the events topic's first
partition merges the window shares every member publishes and runs the comparisons and the
alert rules once, over all queries (`decider`); `ledger` says when a window is whole; `part`
is what the service holds: its role, each tick's decisions, its progress records."""
