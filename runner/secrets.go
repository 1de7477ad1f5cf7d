package runner

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	bt "github.com/baton-run/baton/runner/batontype"
)

// CodeSecretKeyMissing refuses a literal secret on a cluster without a secret key
// (NotifyConfig.SecretKey): it could not be stored encrypted. A reference to an environment
// variable ("env:NAME") needs no key.
const CodeSecretKeyMissing bt.Code = "SECRET_KEY_MISSING"

// CodeSecretEnvRefused refuses an "env:NAME" secret whose NAME lacks the prefix
// NotifyEnvPrefix: the API is no way to read the server's environment.
const CodeSecretEnvRefused bt.Code = "SECRET_ENV_REFUSED"

// NotifyEnvPrefix starts the name of every environment variable an "env:NAME" secret may read.
const NotifyEnvPrefix = "BATON_NOTIFY_"

// The stored forms of a channel's secret.
const (
	sealedPrefix = "enc:v1:"
	envPrefix    = "env:"
)

// secretAAD and urlAAD bind a sealed secret, and a sealed URL, to their use.
var (
	secretAAD = []byte("baton notification channel secret")
	urlAAD    = []byte("baton notification channel url")
)

// secretBox seals and opens channel secrets with AES-GCM under the cluster's key; a nil
// box has no key and seals nothing.
type secretBox struct{ aead cipher.AEAD }

// newSecretBox returns the box of key (16, 24 or 32 bytes), or nil for no key.
func newSecretBox(key []byte) (*secretBox, error) {
	if len(key) == 0 {
		return nil, nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("runner: NotifyConfig.SecretKey: %w (give 32 bytes)", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &secretBox{aead: aead}, nil
}

// store returns the stored form of secret as given: an "env:NAME" reference as it is, a
// literal sealed. SECRET_KEY_MISSING: a literal with no key.
func (b *secretBox) store(secret string) (string, error) {
	if strings.HasPrefix(secret, envPrefix) {
		return secret, nil
	}
	if b == nil {
		return "", &bt.Error{Code: CodeSecretKeyMissing, Field: "secret",
			Message: "no secret key is configured (--secret-key, BATON_SECRET_KEY), so a literal secret cannot be stored encrypted: configure one, or give env:" + NotifyEnvPrefix + "NAME to read the secret from an environment variable"}
	}
	return b.seal(secret, secretAAD)
}

// seal returns plain sealed under the key, bound to aad, in its stored form.
func (b *secretBox) seal(plain string, aad []byte) (string, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := b.aead.Seal(nonce, nonce, []byte(plain), aad)
	return sealedPrefix + base64.StdEncoding.EncodeToString(sealed), nil
}

// unseal opens the stored form of a sealed value bound to aad.
func (b *secretBox) unseal(stored string, aad []byte) (string, error) {
	if b == nil {
		return "", errors.New("the secret is stored encrypted but this instance has no secret key")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(stored, sealedPrefix))
	if err != nil || len(raw) < b.aead.NonceSize() {
		return "", errors.New("the stored secret is damaged")
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], aad)
	if err != nil {
		return "", errors.New("the stored secret does not open with this instance's secret key")
	}
	return string(plain), nil
}

// storeURL returns the stored form of a channel's URL: sealed when it carries credentials
// (credentialURL), as it is otherwise. SECRET_KEY_MISSING on the field url: a credential URL
// with no key.
func (b *secretBox) storeURL(raw string) (string, error) {
	if !credentialURL(raw) {
		return raw, nil
	}
	if b == nil {
		return "", &bt.Error{Code: CodeSecretKeyMissing, Field: "url",
			Message: "this URL carries credentials (userinfo, a query or a path, which may hold a token), so it is stored encrypted, and no secret key is configured (--secret-key, BATON_SECRET_KEY): configure one, or post to a URL of scheme and host alone"}
	}
	return b.seal(raw, urlAAD)
}

// openURL returns a channel's URL from its stored form.
func (b *secretBox) openURL(stored string) (string, error) {
	if !strings.HasPrefix(stored, sealedPrefix) {
		return stored, nil
	}
	u, err := b.unseal(stored, urlAAD)
	if err != nil {
		return "", fmt.Errorf("the channel's URL: %w", err)
	}
	return u, nil
}

// credentialURL reports whether a channel URL is treated as a secret: one with userinfo, a
// query, a fragment or a path other than "/" (a webhook's path often is its token), except
// PagerDuty's public Events v2 endpoint. A URL that does not parse is a secret too.
func credentialURL(raw string) bool {
	if raw == "" || raw == bt.DefaultPagerDutyURL {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	return u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" || (u.Path != "" && u.Path != "/")
}

// shownURL is a channel URL as anyone may see it: scheme://host/… when it carries
// credentials, the URL itself otherwise.
func shownURL(raw string) string {
	if !credentialURL(raw) {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(hidden)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// open returns the secret of its stored form, reading an environment reference with lookup.
func (b *secretBox) open(stored string, lookup func(string) (string, bool)) (string, error) {
	switch {
	case strings.HasPrefix(stored, envPrefix):
		name := strings.TrimPrefix(stored, envPrefix)
		if err := checkEnvName(name); err != nil {
			return "", err
		}
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", fmt.Errorf("environment variable %s is not set on this instance", name)
		}
		return v, nil
	case strings.HasPrefix(stored, sealedPrefix):
		return b.unseal(stored, secretAAD)
	}
	return "", errors.New("the channel has no secret")
}

// checkEnvName refuses an environment variable an "env:NAME" secret may not read: one whose
// name does not start with NotifyEnvPrefix (SECRET_ENV_REFUSED, on the field secret).
func checkEnvName(name string) error {
	// BATON_NOTIFY_ALLOW_PRIVATE_NETWORKS is a setting of the server, not a secret.
	if !strings.HasPrefix(name, NotifyEnvPrefix) || len(name) == len(NotifyEnvPrefix) || name == "BATON_NOTIFY_ALLOW_PRIVATE_NETWORKS" {
		return &bt.Error{Code: CodeSecretEnvRefused, Field: "secret",
			Message: fmt.Sprintf("env: reads only environment variables named %s<NAME> (such as %sPAGERDUTY_KEY), not %q: rename the variable on every instance",
				NotifyEnvPrefix, NotifyEnvPrefix, bt.Truncate(name, 40))}
	}
	return nil
}

// secretHint says which secret a channel holds without giving it away: the environment
// reference, or the last four characters of a literal of 16 or more.
func secretHint(stored, literal string) string {
	switch {
	case stored == "":
		return ""
	case strings.HasPrefix(stored, envPrefix):
		return stored
	case len(literal) >= 16:
		return "…" + literal[len(literal)-4:]
	}
	return "set"
}
