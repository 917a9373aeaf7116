// Package selector reads the label selectors of Reloader's flags
// (--namespace-selector, --resource-label-selector) as Stakater Reloader
// reads them: quotes dropped, legacy "key:value" and "key:*" forms. The
// controller parses its flags with it, and the kubectl plugin the flags of
// the controller it finds, so that both read a selector the same way.
package selector
