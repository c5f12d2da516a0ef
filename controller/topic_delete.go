package controller

// DeleteTopics's decision: one topic's removal.

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/metadata"
)

// TopicRef names a topic by name, or by id when Name is nil (DeleteTopics v6).
type TopicRef struct {
	Name *string
	ID   metadata.Uuid
}

// DeleteTopic removes the topic ref names and returns the image after it. It is refused
// when delete.topic.enable is false (ErrTopicDeletionDisabled), for an unknown name or
// id, and for an internal topic.
func (c *Controller) DeleteTopic(ctx context.Context, ref TopicRef) (*metadata.Image, error) {
	if !c.cfg.DeleteTopicEnable {
		return nil, fmt.Errorf("%w (delete.topic.enable=false)", ErrTopicDeletionDisabled)
	}
	return c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		var topic *metadata.Topic
		if ref.Name != nil {
			if topic = im.Topic(*ref.Name); topic == nil {
				return nil, fmt.Errorf("%w: %s", metadata.ErrUnknownTopic, *ref.Name)
			}
		} else if topic = im.TopicByID(ref.ID); topic == nil {
			return nil, fmt.Errorf("%w: %s", metadata.ErrUnknownTopicID, ref.ID)
		}
		if IsInternalTopic(topic.Name) {
			return nil, InternalTopicError("delete", topic.Name)
		}
		return []metadata.Record{metadata.RemoveTopicRecord{TopicID: topic.ID}}, nil
	})
}
