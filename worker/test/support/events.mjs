// Event bodies the inbox tests send: postwire events (VALIDATE_EVENTS = "postwire") whose
// ordering key the inbox reads.

/** A post event (VALIDATE_EVENTS = "postwire"), ordered by `post:<postId>`; `padTo` bytes. */
export function postEvent(id, postId, padTo = 0) {
  const event = {
    id,
    type: "post.scheduled",
    createdAt: "2026-11-22T09:00:00.000Z",
    workspaceId: "ws1",
    data: {
      post: {
        id: postId,
        externalId: "e",
        group: "g",
        state: "QUEUE",
        publishDate: "2026-11-22T10:00:00.000Z",
        integration: { id: "acc1", providerIdentifier: "x", name: "A" },
        content: "",
      },
    },
  };
  let text = JSON.stringify(event);
  if (padTo > text.length) {
    event.data.post.content = "x".repeat(padTo - text.length);
    text = JSON.stringify(event);
  }
  return text;
}
