"""Abstract argument roles in a request (``{"date": "a date the user refers to"}``).

Descriptions are fixed templates chosen by the role, never text copied from the query.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..schema import MAX_TEXT_CHARS

__all__ = ["extract_arguments"]


_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_LANGUAGES = frozenset("""
english french german spanish italian portuguese dutch russian chinese mandarin cantonese
japanese korean arabic hindi bengali urdu turkish greek polish swedish norwegian danish
finnish czech hungarian romanian ukrainian hebrew thai vietnamese indonesian malay persian
swahili tamil telugu latin
""".split())
_NOT_NAMES = frozenset("""
i me my the a an this that these those it monday tuesday wednesday thursday friday saturday
sunday january february march april may june july august september october november
december today tomorrow please can could would will what which when where who how
""".split())

_CAP = r"[A-Z][A-Za-z'.-]{0,30}"
# (role, description, pattern). Order matters only for the output order of roles.
_PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("email_address", "an email address given by the user",
     re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,5}")),
    ("url", "a web address (URL) given by the user",
     re.compile(r"\b(?:https?://|www\.)[^\s<>\"']{1,2000}", re.IGNORECASE)),
    ("file_name", "the name of a file given by the user",
     re.compile(r"\b[\w-]{1,100}\.(?:pdf|docx?|xlsx?|csv|tsv|json|txt|png|jpe?g|gif|bmp|svg|mp3|mp4|wav|flac|"
                r"avi|mov|zip|tar|gz|py|js|html?|xml|ya?ml|pptx?|md|log|sql|ipynb)\b", re.IGNORECASE)),
    ("file_format", "the file format the user refers to",
     re.compile(r"\b(?:pdf|csv|json|xml|yaml|excel|png|jpe?g|mp3|mp4|wav)\s{1,5}(?:file|format|document)s?\b",
                re.IGNORECASE)),
    ("phone_number", "a phone number given by the user",
     re.compile(r"(?<![\w+])\+?\(?\d{1,4}\)?[\s.-]\d{2,4}[\s.-]\d{3,4}(?:[\s.-]\d{2,4})?(?!\w)")),
    ("amount", "an amount of money given by the user",
     re.compile(r"[$€£¥₹]\s{0,3}\d[\d,]{0,20}(?:\.\d{1,4})?(?:\s{0,3}(?:k|m|million|billion|thousand)\b)?|"
                r"\b\d[\d,]{0,20}(?:\.\d{1,4})?\s{0,3}(?:dollars?|usd|euros?|eur|gbp|pounds sterling|yen|jpy|"
                r"rupees?|inr|yuan|cny|cad|aud|chf)\b", re.IGNORECASE)),
    ("currency", "a currency the user refers to",
     re.compile(r"\b(?:USD|EUR|GBP|JPY|CNY|INR|CAD|AUD|CHF|BTC|ETH)\b|\b(?:dollars?|euros?|yen|rupees?|yuan|"
                r"bitcoin|currency)\b", re.IGNORECASE)),
    ("percentage", "a percentage or rate given by the user",
     re.compile(r"\b\d{1,10}(?:\.\d{1,6})?\s{0,2}(?:%|percent\b|per\s{1,3}cent\b)", re.IGNORECASE)),
    ("date", "the date the user refers to",
     re.compile(
         r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b|"
         rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s{{1,3}}(?:of\s{{1,3}})?{_MONTH}\b\.?(?:,?\s{{1,3}}\d{{4}})?|"
         rf"\b{_MONTH}\.?\s{{1,3}}\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s{{1,3}}\d{{4}})?|"
         rf"\b{_MONTH}\s{{1,3}}\d{{4}}\b|"
         r"\b(?:today|tomorrow|yesterday|tonight|day\s{1,3}after\s{1,3}tomorrow)\b|"
         rf"\b(?:next|this|last|coming)\s{{1,3}}(?:week(?:end)?|month|year|{_WEEKDAY})\b|\b{_WEEKDAY}\b|"
         r"\b(?:in|within)\s{1,3}\d{1,4}\s{1,3}(?:days?|weeks?|months?)\b",
         re.IGNORECASE)),
    ("time", "the time of day the user refers to",
     re.compile(r"\b\d{1,2}(?::\d{2}){0,2}\s{0,2}(?:am|pm|a\.m\.|p\.m\.)(?!\w)|\b\d{1,2}:\d{2}(?::\d{2})?\b|"
                r"\b(?:noon|midnight|morning|afternoon|evening)\b", re.IGNORECASE)),
    ("temperature", "a temperature given by the user",
     re.compile(r"\b-?\d{1,6}(?:\.\d{1,4})?\s{0,2}(?:°\s{0,2}[CF]?|degrees?(?:\s{1,3}(?:celsius|fahrenheit))?|"
                r"celsius|fahrenheit)\b", re.IGNORECASE)),
    ("distance", "a distance or length given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:km|kilomet(?:er|re)s?|miles?|mi|m|met(?:er|re)s?|cm|mm|"
                r"inch(?:es)?|in\.|feet|foot|ft|yards?|yd)\b", re.IGNORECASE)),
    ("weight", "a weight given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:kg|kilograms?|g|grams?|lbs?|pounds?|oz|ounces?|tons?|tonnes?)\b",
                re.IGNORECASE)),
    ("duration", "a length of time given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|"
                r"months?|years?|decades?)\b", re.IGNORECASE)),
    ("volume", "a volume given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:l|liters?|litres?|ml|milliliters?|gallons?|gal|cups?)\b",
                re.IGNORECASE)),
    ("data_size", "a data size given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:[kmgt]b|bytes?|[kmgt]ib)\b", re.IGNORECASE)),
)

# "order #1234", "ticket number AB-12", "user ID: u_42" -> "<keyword>_id".
_ID = re.compile(
    r"\b(order|ticket|invoice|account|booking|reservation|tracking|confirmation|user|customer|product|"
    r"transaction|flight|appointment|device|employee|patient|reminder|meeting|case|item)"
    r"\s{0,3}(?:number|no\.?|id|code|#)?\s{0,3}[:#]?\s{0,3}(?=[A-Za-z0-9_-]{0,40}\d)[A-Za-z0-9_-]{2,40}\b",
    re.IGNORECASE,
)
_HASH_ID = re.compile(r"(?<!\w)#\d{1,20}\b")
# Codes mixing letters and digits (AB12CD, XYZ-123, 9f8e7d); a lookahead keeps it linear.
_CODE = re.compile(r"\b(?=[A-Za-z0-9-]{0,40}[A-Za-z])(?=[A-Za-z0-9-]{0,40}\d)[A-Za-z0-9]{1,20}(?:-[A-Za-z0-9]{1,20}){0,3}\b")
_QUOTED = re.compile(r"\"([^\"\n]{1,500})\"|“([^”\n]{1,500})”|(?<!\w)'([^'\n]{1,500})'(?!\w)")
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,15}(?:[.,]\d{1,15})?(?![\w])")
_PLACE = re.compile(rf"\b(in|at|from|near|to|into|around)\s{{1,3}}((?:{_CAP})(?:\s{{1,2}}(?:{_CAP})){{0,3}})")
_PERSON = re.compile(
    r"\b(?:for|with|to|from|by|call|email|message|text|contact|tell|remind|invite|meet|ask)\s{1,3}"
    r"(?:(?:dr|mr|mrs|ms|prof)\.?\s{1,3})?([A-Z][a-z]{1,20})\s{1,2}([A-Z][a-z]{1,20})\b"
)
_TO_PERSON_VERBS = re.compile(r"\b(?:send|sent|email|mail|message|write|talk|speak|reply|forward|give|pay|"
                              r"transfer|introduce)\b[^.!?]{0,60}$", re.IGNORECASE)

# Mentions of an input with no concrete value ("translate my text", "resize the image"):
# the LLM rewrites name these roles too, so a cue word yields the role.
_CUES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (role, desc, re.compile(pattern, re.IGNORECASE)) for role, desc, pattern in (
        ("text", "a text the user provides", r"\b(?:text|sentence|paragraph|passage|article|document|essay)s?\b"),
        ("image", "an image the user provides", r"\b(?:image|photo|picture|photograph|screenshot)s?\b"),
        ("audio", "an audio recording the user provides", r"\b(?:audio|recording|speech|voice|sound)\b"),
        ("video", "a video the user provides", r"\bvideos?\b"),
        ("question", "the question the user asks", r"\bquestions?\b"),
        ("username", "the user's account name", r"\b(?:username|user\s{1,3}name|login)\b"),
        ("password", "the user's password", r"\bpasswords?\b"),
        ("email_address", "an email address given by the user", r"\be-?mail\s{1,3}address(?:es)?\b"),
        ("phone_number", "a phone number given by the user", r"\bphone\s{1,3}numbers?\b"),
        ("zip_code", "a postal code the user refers to", r"\b(?:zip|postal|post)\s{0,3}codes?\b"),
        ("address", "a street address the user refers to", r"\b(?:street\s{1,3})?address\b(?!\s{0,3}book)"),
        ("location", "a place the user refers to", r"\b(?:location|city|country|region|place|area)\b"),
        ("language", "a language the user refers to", r"\blanguages?\b"),
        ("query", "the search terms the user gives", r"\b(?:search|look\s{1,3}up|query)\b"),
        ("symbol", "a ticker or symbol the user refers to", r"\b(?:stock|ticker|symbol|shares?)\b"),
        ("number", "a number given by the user", r"\b(?:number|integer|digit)s?\b"),
        ("year", "a year the user refers to", r"\byear\b"),
        ("category", "a category the user refers to", r"\b(?:category|categories|genre|type)\b"),
        ("ip_address", "an IP address given by the user", r"\bip(?:\s{1,3}address)?\b"),
        ("domain", "a domain name given by the user", r"\bdomains?\b"),
        ("token", "an authentication token of the user", r"\b(?:token|api\s{1,3}key)\b"),
    )
)


def _iter_arguments(text: str) -> Iterator[tuple[str, str]]:
    for _m in _QUOTED.finditer(text):
        yield "quoted_text", "a quoted text given by the user"
        break
    for role, desc, pattern in _PATTERNS:
        if pattern.search(text):
            yield role, desc
    for m in _ID.finditer(text):
        yield f"{m.group(1).lower()}_id", f"the identifier of the {m.group(1).lower()} the user refers to"
    if _HASH_ID.search(text):
        yield "identifier", "an identifier given by the user"
    for m in _CODE.finditer(text):
        if not re.fullmatch(r"\d{1,2}(?:st|nd|rd|th|am|pm|[kmgt]b|km|kg|mm|cm|ml|m|g|s|h|d)", m.group(0),
                            re.IGNORECASE):
            yield "code", "an alphanumeric code given by the user"
            break
    for m in _PERSON.finditer(text):
        first, last = m.group(1), m.group(2)
        if first.lower() not in _NOT_NAMES and last.lower() not in _NOT_NAMES:
            yield "person_name", "the name of a person the user mentions"
            break
    for m in _PLACE.finditer(text):
        prep, phrase = m.group(1).lower(), m.group(2)
        head = phrase.split()[0].rstrip(".").lower()
        if head in _LANGUAGES:
            role = "source_language" if prep == "from" else "target_language" if prep in {"to", "into"} else "language"
            yield role, f"the {role.replace('_', ' ')} the user refers to"
        elif head in _NOT_NAMES or head.upper() in {"USD", "EUR", "GBP", "JPY", "CNY", "INR", "CAD", "AUD", "CHF"}:
            continue
        elif prep == "to" and (_TO_PERSON_VERBS.search(text[max(0, m.start() - 80):m.start()])):
            yield "recipient", "the person the user wants to reach"
        else:
            role = {"from": "origin", "to": "destination"}.get(prep, "location")
            yield role, "a place name mentioned by the user"
    if _NUMBER.search(text):
        yield "number", "a number given by the user"
    for role, desc, pattern in _CUES:
        if pattern.search(text):
            yield role, desc


def extract_arguments(text: str) -> dict[str, str]:
    """Abstract argument roles mentioned in ``text``.

    Args:
        text: Any string; only its first :data:`~toolsift.schema.MAX_TEXT_CHARS`
            characters are read.

    Returns:
        ``{role: description}`` in a stable order, each role once. Descriptions are fixed
        templates and never contain text from ``text``.
    """
    out: dict[str, str] = {}
    for role, desc in _iter_arguments(text[:MAX_TEXT_CHARS]):
        out.setdefault(role, desc)
    return out
