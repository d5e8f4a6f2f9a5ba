"""Names and bones of the keypoint sets the app draws: COCO's 17 body keypoints (MoveNet, PoseNet)
and the 21 hand landmarks (MediaPipe Hands). Other point counts are drawn as numbered points."""

from __future__ import annotations

COCO_KEYPOINTS = (
    "nose", "left eye", "right eye", "left ear", "right ear", "left shoulder", "right shoulder", "left elbow",
    "right elbow", "left wrist", "right wrist", "left hip", "right hip", "left knee", "right knee", "left ankle",
    "right ankle",
)  # fmt: skip
COCO_BONES = (
    (0, 1), (0, 2), (1, 3), (2, 4), (5, 6), (5, 7), (7, 9), (6, 8), (8, 10), (5, 11), (6, 12), (11, 12),
    (11, 13), (13, 15), (12, 14), (14, 16),
)  # fmt: skip
HAND_LANDMARKS = (
    "wrist", "thumb cmc", "thumb mcp", "thumb ip", "thumb tip", "index mcp", "index pip", "index dip", "index tip",
    "middle mcp", "middle pip", "middle dip", "middle tip", "ring mcp", "ring pip", "ring dip", "ring tip",
    "pinky mcp", "pinky pip", "pinky dip", "pinky tip",
)  # fmt: skip
HAND_BONES = (
    (0, 1), (1, 2), (2, 3), (3, 4), (0, 5), (5, 6), (6, 7), (7, 8), (5, 9), (9, 10), (10, 11), (11, 12), (9, 13),
    (13, 14), (14, 15), (15, 16), (13, 17), (0, 17), (17, 18), (18, 19), (19, 20),
)  # fmt: skip


def names_and_bones(points: int) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    if points == len(COCO_KEYPOINTS):
        return COCO_KEYPOINTS, COCO_BONES
    if points == len(HAND_LANDMARKS):
        return HAND_LANDMARKS, HAND_BONES
    return tuple(f"point {i}" for i in range(points)), ()
