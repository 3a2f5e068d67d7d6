"""Telling, from a provider's error, that the model does not take images (margin.providers.image_refusal)."""

import json

import pytest

from margin.providers import http_error, normalize_provider
from margin.providers.image_refusal import ImagesRefusedError, refuses_images

PROVIDER = {
    "id": "p",
    "type": "openai",
    "name": "L",
    "baseUrl": "http://localhost:8080/v1",
    "apiKey": "",
    "model": "m",
}


def body(message, **extra):
    return json.dumps({"error": {"message": message, **extra}})


REFUSALS = [
    body(
        "Invalid content type. image_url is only supported by certain models.",
        type="invalid_request_error",
        param="messages.[0].content.[1].type",
        code=None,
    ),
    body("This model does not support image input.", type="invalid_request_error"),
    body("Image input is not supported for this model", code=400),
    body("this model is missing data required for image input"),
    body("Model do not support image input.\nRequest id: 021788846573420402c3547e09b7409e3"),
    body(
        "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
        type="invalid_request_error",
        code=400,
    ),
    json.dumps({"error": "Model does not support images. Please use a model that does."}),
]


@pytest.mark.parametrize("text", REFUSALS)
def test_each_real_wording_is_a_refusal(text):
    assert refuses_images(400, text)
    error = http_error(400, text, {}, PROVIDER)
    assert isinstance(error, ImagesRefusedError) and error.code == "images_refused"
    assert "“m”" in error.message


@pytest.mark.parametrize("status", [401, 403, 404, 429, 500])
def test_other_statuses_are_never_a_refusal(status):
    assert not refuses_images(status, REFUSALS[0])


def test_other_bad_requests_stay_bad_requests():
    text = body("unknown field stream_options")
    assert not refuses_images(400, text)
    assert http_error(400, text, {}, PROVIDER).code == "bad_request"


def test_normalize_provider_keeps_supports_images_false():
    assert normalize_provider({**PROVIDER, "supportsImages": False})["supportsImages"] is False
    assert "supportsImages" not in normalize_provider({**PROVIDER, "supportsImages": True})
