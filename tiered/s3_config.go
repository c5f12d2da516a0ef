package tiered

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
)

// S3Config is where and as whom S3Storage stores segments. The broker fills it from the
// properties of Aiven's plugin (docs/configuration.md names them).
type S3Config struct {
	// EndpointURL is the store's address (rsm.config.storage.s3.endpoint.url), e.g.
	// http://127.0.0.1:7070; "" is AWS S3 in Region.
	EndpointURL string
	// Bucket is the bucket of every object (rsm.config.storage.s3.bucket.name).
	Bucket string
	// Region is the bucket's region (rsm.config.storage.s3.region), part of every
	// request's signature.
	Region string
	// PathStyle addresses the bucket in the URL path rather than the host name
	// (rsm.config.storage.s3.path.style.access.enabled), as most S3-compatible servers
	// need.
	PathStyle bool
	// AccessKeyID and SecretAccessKey are the credentials
	// (rsm.config.storage.aws.access.key.id and .secret.access.key). Both empty, the
	// environment's AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) are
	// used.
	AccessKeyID     string
	SecretAccessKey string
	// KeyPrefix starts every object key (rsm.config.key.prefix).
	KeyPrefix string
	// MaxAttempts is how many times a call is tried when the store fails in a way worth
	// retrying (connection errors, 5xx, throttling), with the SDK's jittered exponential
	// backoff; 0 is the SDK's default, 3.
	MaxAttempts int
	// HTTPClient, if set, sends the requests (tests, proxies).
	HTTPClient *http.Client
}

// ErrInvalidS3Config is returned by NewS3Storage for a configuration it cannot use.
var ErrInvalidS3Config = errors.New("invalid tiered storage S3 configuration")

// credentials returns the access key id, secret and session token: the configured pair,
// else the environment's.
func (c S3Config) credentials() (id, secret, token string, err error) {
	id, secret = c.AccessKeyID, c.SecretAccessKey
	if id == "" && secret == "" {
		id, secret, token = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")
	}
	if id == "" || secret == "" {
		return "", "", "", fmt.Errorf("%w: set rsm.config.storage.aws.access.key.id and rsm.config.storage.aws.secret.access.key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", ErrInvalidS3Config)
	}
	return id, secret, token, nil
}

func (c S3Config) validate() error {
	if c.Bucket == "" {
		return fmt.Errorf("%w: rsm.config.storage.s3.bucket.name is not set", ErrInvalidS3Config)
	}
	if c.Region == "" {
		return fmt.Errorf("%w: rsm.config.storage.s3.region is not set", ErrInvalidS3Config)
	}
	if c.EndpointURL != "" {
		u, err := url.Parse(c.EndpointURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: rsm.config.storage.s3.endpoint.url %q is not an http or https URL", ErrInvalidS3Config, c.EndpointURL)
		}
	}
	if c.MaxAttempts < 0 {
		return fmt.Errorf("%w: %d attempts", ErrInvalidS3Config, c.MaxAttempts)
	}
	return nil
}
