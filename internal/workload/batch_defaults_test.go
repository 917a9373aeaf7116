package workload

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestCronJobMode(t *testing.T) {
	cases := map[string]struct {
		flag        string            // --cronjob-trigger, "" when not given
		reloader    bool              // opted in with Reloader's annotations
		annotations map[string]string // the CronJob's
		want        string
	}{
		"Reloader's annotations, no flag":      {reloader: true, want: CronJobTriggerJob},
		"Reroll's annotations, no flag":        {want: CronJobTriggerNone},
		"flag none beats Reloader's default":   {flag: CronJobTriggerNone, reloader: true, want: CronJobTriggerNone},
		"flag job beats Reroll's default":      {flag: CronJobTriggerJob, want: CronJobTriggerJob},
		"annotation beats the flag":            {flag: CronJobTriggerJob, annotations: map[string]string{CronJobTriggerAnnotation: "none"}, want: CronJobTriggerNone},
		"annotation beats Reloader's default":  {reloader: true, annotations: map[string]string{CronJobTriggerAnnotation: "none"}, want: CronJobTriggerNone},
		"unknown annotation value is returned": {annotations: map[string]string{CronJobTriggerAnnotation: "later"}, want: "later"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CronJobMode(tc.flag, tc.reloader, tc.annotations); got != tc.want {
				t.Errorf("CronJobMode = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRecreateFinished(t *testing.T) {
	cases := map[string]struct {
		flag        *bool             // --recreate-completed-jobs, nil when not given
		reloader    bool              // opted in with Reloader's annotations
		annotations map[string]string // the Job's
		want        bool
	}{
		"Reloader's annotations, no flag":        {reloader: true, want: true},
		"Reroll's annotations, no flag":          {want: false},
		"flag false beats Reloader's default":    {flag: ptr.To(false), reloader: true, want: false},
		"flag true beats Reroll's default":       {flag: ptr.To(true), want: true},
		"annotation beats the flag":              {flag: ptr.To(true), annotations: map[string]string{RecreateCompletedAnnotation: "false"}, want: false},
		"annotation beats Reloader's default":    {reloader: true, annotations: map[string]string{RecreateCompletedAnnotation: "false"}, want: false},
		"malformed annotation leaves the flag":   {flag: ptr.To(true), annotations: map[string]string{RecreateCompletedAnnotation: "maybe"}, want: true},
		"annotation true with Reroll's defaults": {annotations: map[string]string{RecreateCompletedAnnotation: "true"}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got, why := RecreateFinished(tc.flag, tc.reloader, tc.annotations); got != tc.want || why == "" {
				t.Errorf("RecreateFinished = %v (%q), want %v", got, why, tc.want)
			}
		})
	}
}
