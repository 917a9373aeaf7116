package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Shell completion. kubectl completes a plugin's arguments by running
// kubectl_complete-<plugin> (plugins/kubectl_complete-reroll runs
// `kubectl-reroll __complete "$@"`), which cobra answers through these
// functions. They read the cluster with the user's credentials, names only;
// any error completes nothing.

// completionTimeout bounds the reads of one completion: a shell waits.
const completionTimeout = 5 * time.Second

// workloadKindNames are the KIND/ prefixes why offers, in the order shown.
var workloadKindNames = []string{"deployment", "statefulset", "daemonset", "cronjob", "job", "rollout", "deploymentconfig"}

// objectKindNames are those who-uses offers.
var objectKindNames = []string{"configmap", "secret"}

// completeKindName returns a ValidArgsFunction that completes one KIND/NAME
// argument: a kind of kinds first (with "/", no space after), then the
// names of that kind in the namespace -n chose.
func completeKindName(o *Options, kinds ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kind, prefix, ok := strings.Cut(toComplete, "/")
		if !ok {
			var out []string
			for _, k := range kinds {
				if strings.HasPrefix(k, strings.ToLower(toComplete)) {
					out = append(out, k+"/")
				}
			}
			return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		}
		names, err := completionNames(cmd.Context(), o, kind)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				out = append(out, kind+"/"+n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionNames lists the names of the objects of kind (as a user types
// it: "deploy", "configmap", ...) in the session's namespace, metadata only.
func completionNames(ctx context.Context, o *Options, kind string) ([]string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	s, err := newSession(o)
	if err != nil {
		return nil, err
	}
	gvr, err := s.mapper.ResourceFor(schemaResource(kind))
	if err != nil {
		return nil, err
	}
	gvk, err := s.mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := s.client.List(ctx, list, client.InNamespace(s.namespace)); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, it := range list.Items {
		out = append(out, it.Name)
	}
	return out, nil
}

// completeNamespaces completes -n and --reroll-namespace with the
// namespaces the user may list.
func completeNamespaces(o *Options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, completionTimeout)
		defer cancel()
		s, err := newSession(o)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		var list corev1.NamespaceList
		if err := s.client.List(ctx, &list); err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, toComplete) {
				out = append(out, ns.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
