package tiered

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Storage is the RemoteStorageManager over an S3-compatible object store, through the
// AWS SDK for Go v2 (request signing, retries with backoff, error codes).
type S3Storage struct {
	client *s3.Client
	bucket string
	keys   ObjectKeys
}

var _ RemoteStorageManager = (*S3Storage)(nil)

// NewS3Storage returns the storage cfg describes. It does not contact the store: a
// wrong endpoint, bucket or credentials show in the first call's error.
func NewS3Storage(cfg S3Config) (*S3Storage, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	id, secret, token, err := cfg.credentials()
	if err != nil {
		return nil, err
	}
	opts := s3.Options{
		Region:       cfg.Region,
		UsePathStyle: cfg.PathStyle,
		Credentials: aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token, Source: "tiered.S3Config"}, nil
		})),
		RetryMaxAttempts: cfg.MaxAttempts,
	}
	if cfg.EndpointURL != "" {
		opts.BaseEndpoint = aws.String(cfg.EndpointURL)
		// S3-compatible stores (older MinIO and Ceph, R2, GCS) refuse the CRC trailers
		// the SDK adds by default since 2025: send and check checksums only where an
		// operation requires them, as AWS's own guidance for such stores says.
		opts.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		opts.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	if cfg.HTTPClient != nil {
		opts.HTTPClient = cfg.HTTPClient
	}
	return &S3Storage{client: s3.New(opts), bucket: cfg.Bucket, keys: ObjectKeys{Prefix: cfg.KeyPrefix}}, nil
}

// Keys returns the storage's object key layout.
func (s *S3Storage) Keys() ObjectKeys { return s.keys }

// CopyLogSegmentData uploads the indexes, then the log, one object each.
func (s *S3Storage) CopyLogSegmentData(ctx context.Context, md *RemoteLogSegmentMetadata, data LogSegmentData) error {
	const op = "copyLogSegmentData"
	if err := md.Validate(); err != nil {
		return err
	}
	if data.LogSegment == "" || data.OffsetIndex == "" || data.TimeIndex == "" || data.ProducerSnapshot == "" {
		return fmt.Errorf("%s: the log, offset index, time index and producer snapshot are required", op)
	}
	files := []struct {
		key, path string
	}{
		{s.keys.Index(md, IndexOffset), data.OffsetIndex},
		{s.keys.Index(md, IndexTimestamp), data.TimeIndex},
		{s.keys.Index(md, IndexProducerSnapshot), data.ProducerSnapshot},
		{s.keys.Index(md, IndexTransaction), data.TransactionIndex},
	}
	for _, f := range files {
		if f.path == "" {
			continue // no transaction index
		}
		if err := s.putFile(ctx, op, f.key, f.path); err != nil {
			return err
		}
	}
	if err := s.put(ctx, op, s.keys.Index(md, IndexLeaderEpoch), bytes.NewReader(data.LeaderEpochIndex), int64(len(data.LeaderEpochIndex))); err != nil {
		return err
	}
	return s.putFile(ctx, op, s.keys.Log(md), data.LogSegment)
}

func (s *S3Storage) putFile(ctx context.Context, op, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return &StorageError{Op: op, Key: key, Err: err}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return &StorageError{Op: op, Key: key, Err: err}
	}
	return s.put(ctx, op, key, f, info.Size())
}

// put uploads body (seekable, so that the SDK can sign and retry it) as key.
func (s *S3Storage) put(ctx context.Context, op, key string, body io.ReadSeeker, size int64) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          body,
		ContentLength: aws.Int64(size),
	})
	if err != nil {
		return storageError(op, key, err)
	}
	return nil
}

// FetchLogSegment returns the log from startPosition to its end.
func (s *S3Storage) FetchLogSegment(ctx context.Context, md *RemoteLogSegmentMetadata, startPosition int64) (io.ReadCloser, error) {
	return s.fetchLog(ctx, md, startPosition, -1)
}

// FetchLogSegmentRange returns the log from startPosition to endPosition, inclusive.
func (s *S3Storage) FetchLogSegmentRange(ctx context.Context, md *RemoteLogSegmentMetadata, startPosition, endPosition int64) (io.ReadCloser, error) {
	if endPosition < startPosition {
		return nil, fmt.Errorf("fetchLogSegment: end position %d before start position %d", endPosition, startPosition)
	}
	return s.fetchLog(ctx, md, startPosition, endPosition)
}

func (s *S3Storage) fetchLog(ctx context.Context, md *RemoteLogSegmentMetadata, start, end int64) (io.ReadCloser, error) {
	if start < 0 {
		return nil, fmt.Errorf("fetchLogSegment: start position %d", start)
	}
	var rng string
	switch {
	case end >= 0:
		rng = fmt.Sprintf("bytes=%d-%d", start, end)
	case start > 0:
		rng = fmt.Sprintf("bytes=%d-", start)
	}
	return s.get(ctx, "fetchLogSegment", s.keys.Log(md), rng)
}

// FetchIndex returns one index whole.
func (s *S3Storage) FetchIndex(ctx context.Context, md *RemoteLogSegmentMetadata, t IndexType) (io.ReadCloser, error) {
	if t.suffix() == "" {
		return nil, fmt.Errorf("fetchIndex: unknown index type %d", int8(t))
	}
	return s.get(ctx, "fetchIndex", s.keys.Index(md, t), "")
}

func (s *S3Storage) get(ctx context.Context, op, key, rng string) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, storageError(op, key, err)
	}
	return &objectBody{body: out.Body, op: op, key: key}, nil
}

// DeleteLogSegmentData deletes the log and every index object, one request each (S3
// deletes of missing keys succeed, so a retried deletion does too).
func (s *S3Storage) DeleteLogSegmentData(ctx context.Context, md *RemoteLogSegmentMetadata) error {
	const op = "deleteLogSegmentData"
	for _, key := range s.keys.All(md) {
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
		if err != nil {
			if se := storageError(op, key, err); !errors.Is(se, ErrRemoteResourceNotFound) {
				return se
			}
		}
	}
	return nil
}

// objectBody turns the errors of reading an object's stream into StorageErrors.
type objectBody struct {
	body    io.ReadCloser
	op, key string
}

func (b *objectBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err != nil && err != io.EOF {
		err = &StorageError{Op: b.op, Key: b.key, Err: err}
	}
	return n, err
}

func (b *objectBody) Close() error { return b.body.Close() }

// storageError wraps an SDK error with the store's error code; NoSuchKey (and a bare
// 404 of a request without a body) is a missing object.
func storageError(op, key string, err error) error {
	se := &StorageError{Op: op, Key: key, Err: err}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		se.Code = apiErr.ErrorCode()
	}
	var noKey *types.NoSuchKey
	if errors.As(err, &noKey) || se.Code == "NoSuchKey" || se.Code == "NotFound" {
		se.NotFound = true
	}
	return se
}
