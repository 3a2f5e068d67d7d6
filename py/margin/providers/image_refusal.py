"""Image refusal: telling, from a provider's error, that the model does not take images.

Sans-IO like `margin.providers.overflow`: an HTTP status and a body in, True or False out.
`margin.providers.http_error` turns a refusal into an `ImagesRefusedError` (code
"images_refused"); `margin.turn.chat` then sends the turn once more with every image replaced by its
`[Figure N: ...]` placeholder, and remembers `supportsImages: false` on the provider.

Rules:
1. Only the providers' own ways of saying it count: OpenAI's "Invalid content type. image_url is
   only supported by certain models", "does not support image input" / "image input is not
   supported" (vLLM, OpenRouter, llama.cpp with its "- hint: ... mmproj"), Ollama's "this model
   is missing data required for image input", LM Studio's "Model does not support images",
   Ollama cloud's "this model does not support image input", a gateway's "Model do not support
   image input", and "does not support images" worded alike by others.
2. Only a 400, 415 or 422 can be a refusal: a refused key, a missing model or a rate limit never
   is, whatever its words.
3. The notice says what happened, no more: the model did not see the images, and was sent only
   their labels, quoted exactly as sent (`images_not_seen_sentence`); it never claims a
   description the model did not get.
"""

from __future__ import annotations

import re

from ..base.errors import ProviderError
from ..base.sentences import Sentence, sentence

_REFUSAL_STATUSES = (400, 415, 422)

_REFUSAL_WORDINGS = re.compile(
    r"image_url is only supported by certain models"
    r"|do(?:es)? not support (?:image input|images|image inputs|vision)"
    r"|image inputs? (?:is|are) not supported"
    r"|missing data required for image input"
    r"|model does not support images",
    re.IGNORECASE,
)


class ImagesRefusedError(ProviderError):
    """ProviderError code "images_refused": the model does not take image parts."""

    def __init__(self, spoken: Sentence):
        super().__init__("images_refused", spoken.english())
        self.sentence = spoken


def refuses_images(status: int, body: str) -> bool:
    """Rules 1 and 2: whether this error says the model does not take images."""
    if status not in _REFUSAL_STATUSES or not isinstance(body, str):
        return False
    return _REFUSAL_WORDINGS.search(body) is not None


def images_refused_sentence(model: str) -> Sentence:
    return sentence("py_error_images_refused", model)


def images_not_seen_sentence(labels: list[str]) -> Sentence:
    """The notice of a retry without pixels (margin.turn.chat rule 10): the model did not see the
    images, and what it was sent instead, each `[Figure N: ...]` label exactly as sent."""
    return sentence("py_notice_images_not_seen", " ".join(labels))
