// Package window parses rollout windows: the weekly times at which Reroll
// may start a rollout (reroll.dev/rollout-window), and answers whether a
// time is inside one and, if not, when the next one opens. Window starts are
// cron schedules parsed by github.com/robfig/cron/v3.
package window
