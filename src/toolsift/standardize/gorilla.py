"""Standardisation rules for Gorilla (HuggingFace APIBench) documentation.

The response is phrased from the Hugging Face task (:data:`TASK_OUTPUTS`) and from
description sentences that say what the model outputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..schema import Tool
from .fields import Fields
from .text import _SPACE, _join, _sentence, clean_text, sentences

__all__ = ["TASK_OUTPUTS"]


#: Conventional output of a Hugging Face task (keys: lower-case task names with spaces),
#: used to phrase the response of a Gorilla tool whose description does not say it.
TASK_OUTPUTS: Mapping[str, str] = {
    "text classification": "predicted labels with confidence scores for the input text",
    "sentiment analysis": "the predicted sentiment label with a confidence score",
    "zero shot classification": "scores of the candidate labels for the input text",
    "natural language inference": "entailment, neutral or contradiction scores for the pair",
    "token classification": "labelled tokens (entities or tags) with positions and scores",
    "named entity recognition": "the named entities found in the text with their types and scores",
    "part of speech tagging": "the part-of-speech tag of each token",
    "question answering": "the answer extracted from the context with a confidence score",
    "table question answering": "the answer to the question computed from the table",
    "document question answering": "the answer to the question found in the document",
    "document question answer": "the answer to the question found in the document",
    "visual question answering": "the answer to the question about the image",
    "summarization": "a summary of the input text",
    "text summarization": "a summary of the input text",
    "translation": "the translated text",
    "text generation": "generated text continuing the prompt",
    "text2text generation": "generated output text for the input text",
    "conversational": "the generated reply in the conversation",
    "fill mask": "candidate words for the masked token with scores",
    "masked language modeling": "candidate words for the masked token with scores",
    "feature extraction": "feature vectors (embeddings) of the input",
    "sentence similarity": "sentence embeddings or similarity scores between sentences",
    "sentence embeddings": "sentence embedding vectors",
    "image classification": "predicted class labels with scores for the image",
    "zero shot image classification": "scores of the candidate labels for the image",
    "video classification": "predicted class labels with scores for the video",
    "audio classification": "predicted class labels with scores for the audio",
    "object detection": "detected objects with labels, bounding boxes and scores",
    "zero shot object detection": "detected objects with labels, bounding boxes and scores",
    "image segmentation": "segmentation masks with labels for regions of the image",
    "semantic segmentation": "a segmentation mask with a class label per pixel",
    "depth estimation": "a depth map of the image",
    "text to image": "generated images for the text prompt",
    "unconditional image generation": "generated images",
    "image to image": "a transformed image",
    "image to text": "text (a caption) for the image",
    "image captioning": "a caption describing the image",
    "text to video": "a generated video for the text prompt",
    "text to speech": "synthesized speech audio for the text",
    "automatic speech recognition": "the transcribed text of the speech",
    "speech recognition": "the transcribed text of the speech",
    "audio to audio": "processed audio (enhanced, separated or translated speech)",
    "voice activity detection": "time segments of the audio that contain speech",
    "tabular classification": "predicted classes for the rows of the table",
    "tabular regression": "predicted numeric values for the rows of the table",
    "reinforcement learning": "the actions of a trained agent in its environment",
}
_MODALITIES = ("natural language processing", "computer vision", "multimodal", "audio",
               "tabular", "reinforcement learning")
_PIPELINE_TASK = re.compile(r"\bpipeline\(\s*(?:task\s*=\s*)?['\"]([\w\-]+)['\"]")
# Description sentences that say what the model outputs, not what it was trained on.
# Only verb forms: "output", "segments", "captions" are nouns as often as verbs
# ("the GPT-2 output detector") and are left out.
_OUTPUT_CUE = re.compile(
    r"\b(?:generates?|generating|outputting|returns?|returning|produces?|producing"
    r"|predicts?|predicting|classif(?:y|ies|ying)|detects?|detecting|transcribes?|transcribing"
    r"|translates?|translating|summari[sz]es?|summari[sz]ing|recogni[sz]es?|recogni[sz]ing"
    r"|segmenting|estimating|answers?\s+(?:questions|the))\b",
    re.IGNORECASE,
)
_MAX_OUTPUT_SENTENCES = 2


def _task_key(text: str) -> str:
    return _SPACE.sub(" ", re.sub(r"[-_]+", " ", text.lower())).strip()


def _domain_task(domain: str) -> str:
    """``"Computer Vision Object Detection"`` -> ``"Object Detection"``."""
    for modality in _MODALITIES:
        if domain.lower().startswith(modality + " "):
            return domain[len(modality) + 1:]
    return domain


def _task_output(doc: Mapping[str, Any], functionality: str, domain: str) -> str:
    """The table's output phrase for the most specific task the document names: the
    ``pipeline('task')`` of ``api_call``, then ``functionality``, then ``domain``."""
    keys: list[str] = []
    call = doc.get("api_call")
    m = _PIPELINE_TASK.search(call) if isinstance(call, str) else None
    if m:
        keys.append(_task_key(m.group(1)))
    keys += [_task_key(functionality), _task_key(_domain_task(domain)), _task_key(domain)]
    for key in keys:
        if key in TASK_OUTPUTS:
            return TASK_OUTPUTS[key]
    return ""


def _text_list(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(clean_text(v) for v in value if clean_text(v))
    return clean_text(value)


# Gorilla argument values are usually examples ('roberta-large', 0.1); a few describe
# the argument ('path to the input audio file'). Only the latter become descriptions.
_DESCRIPTIVE_VALUE = re.compile(r"^[A-Za-z][A-Za-z ,()\-]*$")
_DESCRIPTOR_WORDS = frozenset({"path", "file", "url", "list", "name", "names", "text", "string",
                               "image", "images", "audio", "input", "optional", "number",
                               "integer", "type", "id", "prompt", "labels", "question"})


def _gorilla_param_texts(doc: Mapping[str, Any], tool: Tool) -> dict[str, str]:
    args = doc.get("api_arguments")
    if not isinstance(args, Mapping):
        return {}
    out: dict[str, str] = {}
    for p in tool.parameters:
        value = args.get(p.name)
        if p.description.strip() or not isinstance(value, str):
            continue
        words = value.lower().replace(",", " ").replace("(", " ").replace(")", " ").split()
        if (len(words) >= 2 and _DESCRIPTIVE_VALUE.match(value.strip())
                and _DESCRIPTOR_WORDS.intersection(words)):
            out[p.name] = _sentence(value)
    return out


def _gorilla(doc: Mapping[str, Any], tool: Tool) -> Fields:
    text = clean_text(doc.get("description"))
    domain = _text_list(doc.get("domain"))
    functionality = _text_list(doc.get("functionality"))
    framework = _text_list(doc.get("framework"))
    # "Text Classification" under "NLP Text Classification" only repeats the domain, and
    # 154 tools give their library ("Transformers") as the functionality.
    if functionality and (functionality.lower() in domain.lower()
                          or functionality.lower() in framework.lower()):
        functionality = ""
    parts = [text]
    if domain:
        parts.append(f"Domain: {domain}")
    if functionality:
        parts.append(f"Functionality: {functionality}")
    description = _join(parts)
    outputs = [s for s in sentences(text) if _OUTPUT_CUE.search(s)][:_MAX_OUTPUT_SENTENCES]
    task = _task_output(doc, functionality, domain)
    lead = f"Returns {task}" if task else ""
    if not task and not outputs and (functionality or domain):
        lead = f"Returns a Hugging Face pipeline output for {functionality or _domain_task(domain)}"
    return Fields("gorilla", description, _join([lead, *outputs]), _gorilla_param_texts(doc, tool))
