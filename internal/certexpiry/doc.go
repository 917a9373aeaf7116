// Package certexpiry exports, at each scrape, when the admission webhook's
// serving certificate expires (reroll_webhook_certificate_expiry_timestamp_seconds),
// read from the tls.crt that the webhook server serves, so that an alert
// fires before a certificate that nobody renewed (cert-manager stopped,
// Reroll's rotator denied its Secret) breaks every admission call.
package certexpiry
