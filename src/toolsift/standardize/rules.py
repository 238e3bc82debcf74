"""Rule-based extraction of the four MFTR fields from raw tool documentation.

The MFTR authors standardised raw docs with an LLM; these rules do the deterministic
part of that job for the ToolRet schemas toolsift reads:

* **apibank**: ``parameters`` a list (or a ``"(image: str)"`` string), ``responses``
  ``{name: {type, description}}``.
* **apigen**: ``parameters`` ``{name: {description, type, default}}``.
* **gorilla** (HuggingFace APIBench): ``api_call``, ``api_arguments``, ``domain``,
  ``functionality``, ``description``.
* **toolink**: ``func_description`` (a Python stub) plus a prose ``description``.

Anything else is ``"generic"``: the tool's own fields, cleaned.

Every text produced here is cut out of, or templated around, text of the document
itself. Nothing is generated from world knowledge except one fixed table
(:data:`TASK_OUTPUTS`) that names the conventional output of a Hugging Face task; a
field the document says nothing about stays ``""`` so it gets no weight downstream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..adapters._pysig import parse_signature, prose
from ..schema import Parameter, Tool

__all__ = [
    "TASK_OUTPUTS",
    "Fields",
    "clean_text",
    "derive_fields",
    "mentioned_parameters",
    "name_words",
    "raw_documentation",
    "result_phrases",
    "schema_of",
    "sentences",
]


@dataclass(frozen=True, slots=True)
class Fields:
    """What the rules derived for one tool.

    Attributes:
        schema: The raw schema recognised (``"apibank"``, ``"apigen"``, ``"gorilla"``,
            ``"toolink"`` or ``"generic"``).
        description: Cleaned description (``""`` if the document has none).
        response: Free text on what the tool returns, ``""`` if the document is silent.
        parameter_descriptions: ``{parameter name: text}`` for parameters whose own
            description is empty and for which the document offers text.
    """

    schema: str
    description: str
    response: str
    parameter_descriptions: Mapping[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- text

_FENCE_LINE = re.compile(r"^\s*```")
_WRAPPING_QUOTES = (('"', '"'), ("'", "'"), ("`", "`"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))
_MD_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# Only "**bold**": "__" also wraps Python dunders (__init__), which must survive.
_MD_EMPHASIS = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_MD_INLINE_CODE = re.compile(r"`+([^`]*)`+")
_MD_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+)", re.MULTILINE)
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*\s*/?>")
_SPACE = re.compile(r"\s+")
_HAS_WORD = re.compile(r"[^\W\d_]{2}")
# Whole "descriptions" that are placeholders, e.g. apigen's seven tools described as
# "python" (a fence language tag that lost its code block).
_PLACEHOLDERS = frozenset({"python", "json", "javascript", "js", "bash", "shell", "code",
                           "n/a", "na", "none", "null", "todo", "tbd", "description"})
# A sentence ends at . ! ? followed by space and something that can start a sentence;
# "e.g. the" and "v1.5" therefore do not split.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[])")
_ABBREVIATION_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|Dr|Mr|Mrs|Ms|No|Fig)\.$")


def _fence_split(text: str) -> tuple[str, str]:
    """``(prose outside fences, code inside fences)`` of a markdown text."""
    outside: list[str] = []
    inside: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE_LINE.match(line):
            in_fence = not in_fence
            continue
        (inside if in_fence else outside).append(line)
    return "\n".join(outside), "\n".join(inside)


def _unwrap_quotes(text: str) -> str:
    """Drop quote pairs wrapping the whole text, unless the quote also occurs inside
    (``'a' and 'b'`` starts and ends with a quote but is not wrapped)."""
    changed = True
    while changed and len(text) >= 2:
        changed = False
        for left, right in _WRAPPING_QUOTES:
            inner = text[1:-1]
            if text[0] == left and text[-1] == right and left not in inner and right not in inner:
                text = inner.strip()
                changed = True
                break
    return text


def clean_text(value: Any) -> str:
    """Normalise a raw documentation string into one line of plain prose.

    Drops fenced code blocks (keeping their content only when there is no prose
    around them), markdown markup (emphasis, inline code ticks, links, headings,
    bullets), simple HTML tags and quotes wrapping the whole text, then collapses
    whitespace. Placeholders (``"python"``, ``"N/A"``, ``"."``) become ``""``.

    Args:
        value: Anything; non-strings give ``""``.

    Returns:
        The cleaned text, or ``""``.
    """
    if not isinstance(value, str):
        return ""
    text = value
    if "```" in text:
        outside, inside = _fence_split(text)
        text = outside if _HAS_WORD.search(outside) else inside
    text = _MD_IMAGE_OR_LINK.sub(r"\1", text)
    text = _MD_LINE_MARK.sub("", text)
    text = _HTML_TAG.sub(" ", text)
    text = _SPACE.sub(" ", text).strip()
    text = _unwrap_quotes(text)
    text = _MD_EMPHASIS.sub(r"\1", text)
    text = _MD_INLINE_CODE.sub(r"\1", text)
    text = _SPACE.sub(" ", text).strip()
    if not _HAS_WORD.search(text) or text.lower().rstrip(".") in _PLACEHOLDERS:
        return ""
    return text


def sentences(text: str) -> list[str]:
    """Split cleaned prose into sentences (abbreviations such as ``e.g.`` do not end one)."""
    out: list[str] = []
    for part in _SENTENCE_END.split(text):
        part = part.strip()
        if not part:
            continue
        if out and _ABBREVIATION_END.search(out[-1]):
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    return out


def _sentence(text: str) -> str:
    """``text`` with a capital first letter and a final full stop."""
    text = text.strip().rstrip(",;:").strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _join(parts: Iterable[str]) -> str:
    """Sentences joined by spaces, empty and repeated ones (case-insensitively) dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for part in parts:
        s = _sentence(part)
        key = s.casefold()
        if s and key not in seen:
            seen.add(key)
            out.append(s)
    return " ".join(out)


_IDENT_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-./:]+")


def name_words(name: str) -> str:
    """``"sendEmail"``/``"send_email"`` -> ``"send email"``."""
    return " ".join(p for p in _IDENT_SPLIT.split(name) if p)


# ------------------------------------------------------------- result phrases

# Verbs whose object *is* what the tool hands back ("Fetches the valuation data ...").
# "converts", "translates", "validates" are absent on purpose: their object is the
# input; checks are handled by _CHECK.
_RESULT_VERB = (
    r"fetch(?:es)?|retrieves?|gets?|returns?|obtains?|provides?|lists?|finds?"
    r"|search(?:es)? for|looks? up|calculates?|computes?|generates?|counts?|extracts?"
    r"|estimates?|predicts?|determines?|downloads?"
)
# Sentence-initial: "Fetches X", "This function calculates X", "It returns X", "To find X".
_LEAD = re.compile(
    r"^(?:(?:this|the)\s+(?:\w+\s+)?(?:function|method|tool|api|endpoint|service|operation)\s+"
    r"|it\s+(?:also\s+)?|to\s+)?"
    rf"(?:{_RESULT_VERB})\s+(?P<obj>.+)$",
    re.IGNORECASE,
)
# Inside a sentence only lowercase verbs count, so "makes a GET request" is no result.
_MID = re.compile(
    r"\b(?:and|which|that|it|also|then)\s+(?:also\s+)?"
    r"(?:returns?|retrieves?|fetch(?:es)?|provides?|outputs?|yields?|gives?)\s+(?P<obj>.+)$"
)
# "Reverse geocoding to obtain address information for given coordinates."
_MID_PURPOSE = re.compile(
    r"\bto\s+(?:obtain|get|retrieve|fetch|find|look up)\s+(?P<obj>.+)$"
)
# A check gives back a yes/no: "Checks if a number is prime" -> "Returns whether ...".
_CHECK = re.compile(
    r"^(?:(?:this|the)\s+(?:\w+\s+)?(?:function|method|tool|api|endpoint)\s+)?"
    r"(?:checks?|validates?|verif(?:y|ies)|determines?|tests?)\s+(?:if|whether)\s+(?P<obj>.+)$",
    re.IGNORECASE,
)
# "Given the ratio of butter to sugar, this function calculates the total cups ...".
_MID_SUBJECT = re.compile(
    rf"\b(?:this|the)\s+(?:function|method|tool)\s+(?:{_RESULT_VERB})\s+(?P<obj>.+)$"
)
# A sentence about the output itself: "The results include a `result_type` field ...".
_OUTPUT_SUBJECT = re.compile(
    r"^(?:the|its|each)\s+(?:results?|response|output|return value)s?\b", re.IGNORECASE
)
# Where the data comes from is not what it is: "... using the Amazon Data Scraper API".
# The tempered middle stops at the *last* connective, so "quotes from a specified page
# using the Toolbench RapidAPI" keeps "from a specified page".
_CONNECTIVE = r"(?:using|via|through|from|with|by (?:calling|querying|using))"
_SOURCE_TAIL = re.compile(
    rf"\s*,?\s+{_CONNECTIVE}\s+(?:the\s+|an?\s+)?"
    rf"(?:(?!\b{_CONNECTIVE}\b)[^,.;])*?"
    r"\b(?:APIs?|RapidAPI|service|endpoint|database|library)\b[^.;]*$",
    re.IGNORECASE,
)
# Objects that are not data: "Returns nothing", "gets started".
_NOT_DATA = re.compile(
    r"^(?:nothing|none|started|access to|an? interface|functionality)\b", re.IGNORECASE
)
_MAX_OBJECT_CHARS = 300


def _returns(obj: str) -> str:
    """``"Returns <obj>"``; a capitalised article (``"An integer ..."``) is lowered."""
    obj = obj.strip()
    if re.match(r"(?:A|An|The)\s", obj):
        obj = obj[0].lower() + obj[1:]
    return f"Returns {obj}"


def _object(raw: str) -> str:
    obj = raw.strip().rstrip(".!?").strip()
    obj = _SOURCE_TAIL.sub("", obj).strip().rstrip(",;:").strip()
    if not _HAS_WORD.search(obj) or _NOT_DATA.match(obj):
        return ""
    if len(obj) > _MAX_OBJECT_CHARS:
        obj = obj[:_MAX_OBJECT_CHARS].rsplit(" ", 1)[0]
    return obj


def result_phrases(text: str) -> list[str]:
    """Sentences of ``text`` about what the tool gives back, as ``"Returns <object>."``.

    A sentence contributes when it starts with a result verb (``Fetches X``,
    ``This function calculates X``, ``To find X``), contains one after a connective
    (``... and returns X``, ``It returns X``), or is about the output itself
    (``The results include ...``, kept whole). A trailing data-source clause
    (``using the Foo API``) is dropped from the object.

    Args:
        text: Cleaned prose.

    Returns:
        The phrases in text order, possibly empty.
    """
    out: list[str] = []
    for s in sentences(text):
        if _OUTPUT_SUBJECT.match(s):
            out.append(s)
            continue
        m = _CHECK.match(s)
        if m:
            obj = _object(m.group("obj"))
            if obj:
                out.append(f"Returns whether {obj}")
            continue
        m = _LEAD.match(s) or _MID.search(s) or _MID_SUBJECT.search(s) or _MID_PURPOSE.search(s)
        if m:
            obj = _object(m.group("obj"))
            if obj:
                out.append(_returns(obj))
    return out


# --------------------------------------------------------- parameter mentions

_Q = r"[`'\"\u2018\u2019]"  # a quote around a parameter name in prose
_WHAT_END = r"(?=[,.;:)]|\s+and\s+(?:the\s+)?[`'\"]|\s+respectively|$)"
_LIST_SEP = re.compile(r",\s*(?:and\s+)?|\s+and\s+")
_RESPECTIVELY = re.compile(
    rf"(?P<names>(?:{_Q}\w+{_Q}(?:,\s*(?:and\s+)?|\s+and\s+))+{_Q}\w+{_Q}),?\s+"
    r"(?:which|that)?\s*(?:are|represent|representing|refer to|specify)\s+"
    r"(?P<what>[^.;]+?),?\s+respectively",
    re.IGNORECASE,
)
# Not a description: "one argument", or a fragment such as "of 'whole'" (from
# "'part' represents of 'whole'").
_USELESS_WHAT = re.compile(
    r"^(?:(?:one|two|three|\w+)?\s*(?:arguments?|parameters?|inputs?)"
    r"|of|to|in|for|by|with|from|on|at|and|or)\b",
    re.IGNORECASE,
)


# 'x', which is the semester grade / 'x' (the semester grade) / The 'x' parameter refers to ...
# After a bare "is"/"are" only a noun phrase counts: "'num' is divisible by 9" is a
# statement about the value, not a description of it.
_NOUN_START = (r"(?=(?:an?|the|one|two|three|lists?|tuples?|strings?|integers?|floats?|numbers?"
               r"|dictionar\w+|used\s+(?:to|for))\b)")
_MENTION = re.compile(
    rf"{_Q}(?P<name>\w+){_Q}\s*(?:parameter\s+|argument\s+)?"
    rf"(?:\((?P<paren>(?:an?|the|as)\s[^)]{{2,}})\)|,?\s*(?:which\s+|that\s+)?"
    rf"(?:(?:is|are)\s+{_NOUN_START}|(?:represents|representing|refers to|specifies|denotes|"
    r"indicates|contains)\s+)"
    rf"(?P<what>[^,.;:]{{3,}}?){_WHAT_END})",
    re.IGNORECASE,
)
# an integer `n`, a float number `y`: a short type phrase right before the name.
_TYPED_MENTION = re.compile(
    r"\b(?P<what>an?\s+"
    r"(?!(?:\w+\s+)?(?:with|between|of|by|to|for|in|on|from|the|whether|if|that|which)\b)"
    rf"[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*)?)\s+{_Q}(?P<name>\w+){_Q}"
)


def _respectively(text: str, names: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _RESPECTIVELY.finditer(text):
        listed = re.findall(rf"{_Q}(\w+){_Q}", m.group("names"))
        items = [clean_text(i) for i in _LIST_SEP.split(m.group("what"))]
        # "lists of divisors of 'a' and 'b', respectively" splits into a bogus "'b'": a
        # list with any item that is not a phrase is misaligned, so none of it is used.
        if len(listed) == len(items) and all(items):
            for n, what in zip(listed, items):
                if n in names and n not in out:
                    out[n] = what
    return out


_TAKES_ONE = re.compile(
    r"\btakes\s+(?:in\s+)?(?P<what>an?\s+[^,.;]+?)"
    r"(?:\s+as\s+(?:an?\s+)?(?:input|argument|parameter))?"
    r"(?=,|\.|;|\s+and\s+|\s+which\b|$)",
    re.IGNORECASE,
)


def mentioned_parameters(text: str, params: Sequence[Parameter]) -> dict[str, str]:
    """Descriptions for parameters with an empty one, from prose that names them.

    Recognises ``'a' and 'b', which are X and Y, respectively``, ``'a', which is X``,
    ``'a' (X)``, ``The 'a' parameter refers to X``, ``an integer `n```, and, for a
    tool with a single parameter, ``takes a list of integers``.

    Args:
        text: Cleaned prose (a description).
        params: The tool's parameters.

    Returns:
        ``{name: description}`` for parameters whose description is empty.
    """
    empty = [p.name for p in params if not p.description.strip()]
    if not empty or not text:
        return {}
    wanted = set(empty)
    found = _respectively(text, wanted)
    # One pass per pattern over the text (not one compiled pattern per name): catalogues
    # have thousands of distinct names and would thrash the regex cache.
    for pattern in (_MENTION, _TYPED_MENTION):
        for m in pattern.finditer(text):
            name = m.group("name")
            if name not in wanted or name in found:
                continue
            what = (m.groupdict().get("paren") or m.group("what") or "").strip()
            if what and not _USELESS_WHAT.match(what):
                found[name] = what
    if len(params) == 1 and empty == [params[0].name] and params[0].name not in found:
        m = _TAKES_ONE.search(text)
        if m and not _USELESS_WHAT.match(m.group("what").split(" ", 1)[1]):
            found[params[0].name] = m.group("what")
    cleaned = {k: clean_text(v) for k, v in found.items()}
    return {k: _sentence(v) for k, v in cleaned.items() if v}


# ------------------------------------------------------------------- schemas


def schema_of(doc: Mapping[str, Any]) -> str:
    """Name the raw schema of a ToolRet ``documentation`` object (by shape, like the
    adapter): ``"gorilla"``, ``"toolink"``, ``"apibank"``, ``"apigen"`` or ``"generic"``."""
    if "api_call" in doc:
        return "gorilla"
    if isinstance(doc.get("func_description"), str):
        return "toolink"
    params = doc.get("parameters")
    if isinstance(params, (list, str)) or "responses" in doc or "expressions" in doc:
        return "apibank"
    # A JSON Schema ({"type": "object", ...}) has string values, so it is not apigen.
    if isinstance(params, Mapping) and all(isinstance(v, Mapping) for v in params.values()):
        return "apigen"
    return "generic"


def _fallback_description(tool: Tool) -> str:
    """The tool name in words: the one thing every document says about the tool."""
    return _sentence(name_words(tool.name))


def _responses_text(responses: Any) -> str:
    """apibank ``{name: {type, description}}`` as one sentence."""
    if isinstance(responses, str):
        return clean_text(responses)
    if not isinstance(responses, Mapping) or not responses:
        return ""
    items: list[str] = []
    for name, spec in responses.items():
        if isinstance(spec, Mapping):
            ptype = spec.get("type") if isinstance(spec.get("type"), str) else ""
            desc = clean_text(spec.get("description")).rstrip(".")
            head = f"{name} ({ptype})" if ptype else str(name)
            items.append(f"{head}: {desc}" if desc else head)
        else:
            items.append(str(name))
    return "Returns " + "; ".join(items)


def _apibank(doc: Mapping[str, Any], tool: Tool) -> Fields:
    description = clean_text(doc.get("description"))
    response = _responses_text(doc.get("responses", doc.get("response")))
    if not response:
        response = _join(result_phrases(description))
    return Fields("apibank", description, _sentence(response),
                  mentioned_parameters(description, tool.parameters))


def _apigen(doc: Mapping[str, Any], tool: Tool) -> Fields:
    description = clean_text(doc.get("description"))
    return Fields("apigen", description, _join(result_phrases(description)),
                  mentioned_parameters(description, tool.parameters))


# --- gorilla

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


# --- toolink

_LABELLED = re.compile(r"^\s*(?P<key>[A-Z][A-Za-z ]{1,20}):\s*(?P<value>.+?)\s*$")
_BARE_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*(?:\.\w+)*$")
_IDENT_UNDERSCORE = re.compile(r"(?<=[A-Za-z0-9])_+(?=[A-Za-z0-9])")


def _labelled(text: str) -> dict[str, str]:
    """``"Name: f\\nUtility: ...\\nOutput: ..."`` prose (one toolink tool) as a dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _LABELLED.match(line)
        if m:
            out.setdefault(m.group("key").strip().lower(), m.group("value"))
    return out


def _stub_response(code: str, prose_text: str, param_names: Iterable[str]) -> str:
    """``"Returns <expr>"`` from the stub's last ``return`` (identifiers as words), or
    ``""``. With prose already saying what is returned, only a bare name that adds
    words (``return work_done``) is kept; returning a parameter (``return num1``) adds
    nothing."""
    sig = parse_signature(code)
    if sig is None or not (sig.return_expr or sig.returns):
        return ""
    expr = sig.return_expr
    if prose_text:
        if not _BARE_IDENTIFIER.match(expr) or expr in set(param_names):
            return ""
        words = name_words(expr).lower().split()
        known = set(re.findall(r"\w+", prose_text.lower()))
        return "" if all(w in known for w in words) else f"Returns {name_words(expr)}"
    shown = _IDENT_UNDERSCORE.sub(" ", expr) if expr else ""
    annotation = f"{sig.returns}" if sig.returns else ""
    if shown and annotation:
        return f"Returns {annotation}: {shown}"
    return f"Returns {shown or annotation}"


def _toolink(doc: Mapping[str, Any], tool: Tool) -> Fields:
    code = doc["func_description"]
    description = clean_text(doc.get("description"))
    labelled = _labelled(_fence_split(code)[0])
    if not description:
        description = clean_text(labelled.get("utility") or labelled.get("description")
                                 or prose(code))
    found = result_phrases(description)
    if labelled.get("output"):
        found.append(_returns(clean_text(labelled["output"])))
    stub = _stub_response(code, " ".join(found), (p.name for p in tool.parameters))
    response = _join([*found, stub])
    params = mentioned_parameters(description, tool.parameters)
    if labelled.get("input") and len(tool.parameters) == 1 and not tool.parameters[0].description:
        params.setdefault(tool.parameters[0].name, _sentence(clean_text(labelled["input"])))
    return Fields("toolink", description, response, params)


def _generic(doc: Mapping[str, Any], tool: Tool) -> Fields:
    description = clean_text(doc.get("description")) or clean_text(tool.description)
    response = clean_text(tool.response) or _responses_text(doc.get("responses")) \
        or _join(result_phrases(description))
    return Fields("generic", description, _sentence(response) if response else "",
                  mentioned_parameters(description, tool.parameters))


_RULES: Mapping[str, Callable[[Mapping[str, Any], Tool], Fields]] = {
    "apibank": _apibank,
    "apigen": _apigen,
    "gorilla": _gorilla,
    "toolink": _toolink,
    "generic": _generic,
}


def raw_documentation(tool: Tool) -> Mapping[str, Any] | None:
    """The ToolRet ``documentation`` object kept in ``tool.source``, if there is one."""
    source = tool.source
    if isinstance(source, Mapping) and isinstance(source.get("documentation"), Mapping):
        return source["documentation"]
    return None


def derive_fields(tool: Tool) -> Fields:
    """Apply the rules of the tool's raw schema.

    Works from the raw ToolRet record in ``tool.source`` when there is one, otherwise
    from the tool's own fields (schema ``"generic"``). A description left empty falls
    back to the tool name in words.

    Args:
        tool: A tool, typically from :func:`toolsift.adapters.toolret_tool`.

    Returns:
        The derived fields.
    """
    doc = raw_documentation(tool)
    if doc is None:
        fields = _generic({}, tool)
    else:
        fields = _RULES[schema_of(doc)](doc, tool)
    if not fields.description:
        fields = Fields(fields.schema, _fallback_description(tool), fields.response,
                        fields.parameter_descriptions)
    return fields
