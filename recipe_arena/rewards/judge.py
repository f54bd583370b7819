"""LM-as-judge: reference-based and open-ended grading, score parsed into [0, 1].

The judge model sits behind a small ``TextGenerator`` protocol with two
implementations: ``EngineGenerator`` (any project engine + its tokenizer) and
``HTTPGenerator`` (any OpenAI-compatible ``/v1/chat/completions`` endpoint, such as
``vllm serve``); which model judges is ``rewards/judge_model.py``'s part. Prompts are
template files in ``rewards/templates/``. The judge
answers "Score: N" with N in 0..10; the reward is N / 10. Timeouts, failed requests
and unparsable verdicts score 0 and are counted (``chat/judge_failed``,
``chat/judge_unparsable``) so a weak or broken judge shows up in the metrics.
"""

from __future__ import annotations

import json
import re
import threading
import time
import unicodedata
import urllib.error
import urllib.request
from collections import Counter, OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.text import RewardResult, answer_text, is_blank, unseen

TEMPLATES = Path(__file__).parent / "templates"
MAX_JUDGED_CHARS = 4000
"""Answers are cut to this many characters before judging (keeps prompts bounded)."""
SHORT_REPLY_CHARS = 40
"""A label-less verdict is accepted only from a reply this short (see parse_score)."""
CUT_MARK = "\n[cut at the token cap]"
"""Ends a reply the judge did not finish (it reached its token cap). Such a reply is
read only by its labels: a bare number in it can be the start of a copy of the answer
("aaaaaaaaaaaaaaaaaaaaaaaaa / 7 x.", the answer's last word and the reference, when a long
answer word pushed the verdict past the cap)."""


def uncut(reply: str | None) -> str | None:
    """``reply`` without ``CUT_MARK``: text used as it is (a rubric), not read for a score."""
    return reply.removesuffix(CUT_MARK) if reply else reply


_SCORE_RE = re.compile(
    r"(?<![a-z])(?:score|rating)"
    r"(?:(?=[\s:=*])|(?<!\dscore)(?<!\drating)(?=\d+(?:\.\d+)?(?![a-z0-9.])))"
    r"\s*[:=]?\s*\**\s*(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
"""A verdict's label: "Score: 7", "rating = 7". The label is a word of its own: a word
that ends in it ("generating 10", "underscore 9", in a reply's account of the answer
after its verdict) would otherwise be read as the last verdict. A label written against
its number with nothing between (``Score00``, as the micro judge sometimes writes it)
is read only where it starts a word and the number ends it: a judge's copy of an
answer's last word ``score10aaaa…`` or ``0000score10``, at the start of a reply cut at
its token cap before its own label, read 1.0. After a digit, a label with its colon is
still read (the micro judge writes ``0741Score: 0`` too). Read through ``labels``, which
holds any letter to that rule, not ASCII ones only."""


def labels(pattern: re.Pattern[str], text: str, glued_end: str = "_.") -> list[str]:
    """The values of ``pattern``'s verdict labels (``_SCORE_RE``, ``rubric._WINNER_RE``) in
    ``text`` that are words of their own as drawn: the patterns part a label from a word
    only by ASCII letters and digits, so a label glued to a letter of another script
    (``ééééscore10``, ``0000éwinnera``), to ``_`` (``aaaa_score10``) or across a
    combining mark or a zero-width character (``aaaa\u0301score10``,
    ``winnera\u200bbbbb``, ``score10\u200baaaa``), one word to a reader, was read as a
    verdict. A judge that copies the answer's last word and is cut at its token cap before
    its own label left such a copy as its last label (a wrong answer scored 1.0 or won
    its game). A label written against its value (``Score00``) must also end its word:
    after its value, no letter, digit or character of ``glued_end``. Replies in ASCII
    without ``_`` read as the patterns alone read them."""
    return [m.group(1) for m in pattern.finditer(text) if _own_word(text, m, glued_end)]


def _own_word(text: str, m: re.Match[str], glued_end: str) -> bool:
    """Whether label ``m`` is a word of its own in ``text`` (``labels``): no letter
    (``_joins``) or ``_`` drawn before it; written against its value, no digit before
    it and no letter, digit, ``_`` or character of ``glued_end`` after its value;
    written apart from it, no ``_`` after its value, nor a letter reached past a
    character outside ASCII (``Score: 10éé``, ``score:10\u200baa``), and, where a digit
    is drawn before it or a letter after its value, a space before its value: a judge's
    copy of an answer's last word ``score:10aaaa`` or ``0000score:10``, cut at its token
    cap, read 1.0, while ``Score: 10tie`` and ``0741Score: 0``, as the micro judge
    writes them, are read."""
    before = _drawn_beside(text, m.start(), -1)
    after = _drawn_beside(text, m.end(1), 1)
    if _joins(before) or after == "_":
        return False
    if text[m.start(1) - 1].isalpha():  # the label touches its value
        glued_after = _joins(after) or after.isdigit() or (after != "" and after in glued_end)
        return not (before.isdigit() or glued_after)
    if _joins(after) and not text[m.end(1)].isascii():
        return False
    return text[m.start(1) - 1].isspace() or not (before.isdigit() or _joins(after))


_SPACELESS = frozenset({"CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER"})
"""Scripts written without spaces between words (by the first word of their letters'
Unicode names): a label written against one of their letters (``评分结果Winner: A``,
``Score: 8分``) starts or ends a word of its own there."""


def _joins(c: str) -> bool:
    """Whether ``c``, drawn against a label, makes it part of a longer word: ``_`` or a
    letter of a script written with spaces between words."""
    if c == "_":
        return True
    return c.isalpha() and unicodedata.name(c, "").split(" ")[0] not in _SPACELESS


def _drawn_beside(text: str, i: int, step: int) -> str:
    """The character drawn next to position ``i`` of ``text`` (before it for ``step`` -1,
    from it for 1), past combining marks and what is drawn as nothing
    (``_unseen_or_mark``); ``""`` at either end."""
    j = i - 1 if step < 0 else i
    while 0 <= j < len(text) and _unseen_or_mark(text[j]):
        j += step
    return text[j] if 0 <= j < len(text) else ""


def _unseen_or_mark(c: str) -> bool:
    """Whether ``c`` is drawn on the character before it (a combining mark) or as nothing,
    as IFEval reads an answer (``text.unseen``: format characters but the drawn ones,
    control characters other than whitespace, the other default-ignorable code points).
    A control character between two letters parts no word a reader sees:
    ``aaaa\x01score10`` and ``winnera\x01bbbb`` copied by a judge cut at its cap read
    1.0 and "Winner: A" while format characters there (``\u200b``) were refused. The
    drawn format characters (``۝``) are drawn, as a ``*`` or a space is, and part a
    label from a word as those do."""
    return unicodedata.category(c)[0] == "M" or unseen(c)


Chat = list[dict[str, str]]


class TextGenerator(Protocol):
    """Chat prompts in, one reply (or None on failure) per prompt out; ``max_new_tokens``
    overrides the generator's own cap for this call (a rubric needs more than a verdict)."""

    def generate(
        self, prompts: Sequence[Chat], max_new_tokens: int | None = None
    ) -> list[str | None]: ...

    def close(self) -> None: ...


def template(name: str) -> str:
    """The text of ``templates/<name>.txt``."""
    path = TEMPLATES / f"{name}.txt"
    if not path.exists():
        have = ", ".join(sorted(p.stem for p in TEMPLATES.glob("*.txt")))
        raise ValueError(f"no judge template {name!r}; available: {have}")
    return path.read_text(encoding="utf-8")


class EngineGenerator:
    """Greedy generation through a project engine (``recipe_arena.engines``). ``markers``
    is ``rewards.judge_markers``: how chat markers inside a message are tokenised
    (``judge_markup``)."""

    def __init__(
        self, engine: Any, tokenizer: Any, max_new_tokens: int = 64, markers: str = "text"
    ) -> None:
        self.engine, self.tok, self.max_new_tokens = engine, tokenizer, max_new_tokens
        self.markers = markers
        self._n = 0

    def generate(
        self, prompts: Sequence[Chat], max_new_tokens: int | None = None
    ) -> list[str | None]:
        from recipe_arena.engines.base import GenerationRequest, SamplingParams

        cap = max_new_tokens or self.max_new_tokens
        sp = SamplingParams(max_new_tokens=cap, temperature=0.0)
        reqs, where = [], []
        for k, p in enumerate(prompts):
            ids = self._encode(p)
            if not self._fits(ids):
                continue  # longer than the judge's context: a failed verdict, not a crash
            self._n += 1
            reqs.append(GenerationRequest(f"judge-{self._n}", ids, sp))
            where.append(k)
        out: list[str | None] = [None] * len(prompts)
        for k, c in zip(where, self.engine.generate(reqs) if reqs else [], strict=True):
            text = self.tok.decode(list(c.tokens), skip_special_tokens=True)
            out[k] = text if c.finish_reason == "stop" else text + CUT_MARK
        return out

    def _fits(self, ids: Sequence[int]) -> bool:
        context = getattr(self.engine, "context", None)
        return context is None or len(ids) + 1 <= context

    def _encode(self, prompt: Chat) -> tuple[int, ...]:
        from recipe_arena.rewards.judge_markup import encode_judge_prompt

        return encode_judge_prompt(self.tok, prompt, self.markers)

    def fits(self, prompt: Chat) -> bool:
        """Whether ``prompt`` and one reply token fit the judge's context (tokens)."""
        return self._fits(self._encode(prompt))

    def close(self) -> None:
        self.engine.close()


REFUSED_STATUS = frozenset({400, 413, 422})
"""HTTP statuses by which an endpoint refuses a request for what it holds: vLLM and
OpenAI answer 400 to a prompt that leaves no room for ``max_tokens`` in the model's
context. Such a request is not retried."""


CUT_REASONS = frozenset(
    {
        "length",
        "max_tokens",
        "model_length",
        "content_filter",
        "abort",
        "safety",
        "recitation",
        "prohibited_content",
        "blocklist",
        "spii",
        "refusal",
        "pause_turn",
        "error",
        "cancelled",
        "canceled",
    }
)
"""An endpoint's ``finish_reason`` values, in any case, that say the reply stopped
before the model ended it; such a reply is read as one cut at the cap (``CUT_MARK``).
``length`` and ``max_tokens`` are the cap (OpenAI, vLLM; Anthropic and gateways write
``max_tokens`` or ``MAX_TOKENS``); ``content_filter`` (OpenAI), ``abort`` (vLLM,
SGLang), Gemini's ``SAFETY``, ``RECITATION`` and kin, and Anthropic's ``refusal`` and
``pause_turn`` stop a reply as abruptly. Read as finished, the answer's words a judge had
copied by then (``The answer says 9 apples,``) were a short reply's one number, 0.9.
Any other reason, or none, is a reply the model ended (``stop``, ``eos``, ``end_turn``,
``tool_calls``, Cohere's ``COMPLETE``): a list of the ended ones failed honest short
replies under reasons it did not name. SGLang's object form (``{"type": "length"}``) is
read by its ``type``."""


def finish_cut(why: object) -> bool:
    """Whether a ``finish_reason`` (a string, None, or SGLang's object with a ``type``)
    marks a reply the model did not end (``CUT_REASONS``)."""
    if isinstance(why, dict):
        why = why.get("type")
    return isinstance(why, str) and why.strip().lower() in CUT_REASONS


class HTTPGenerator:
    """An OpenAI-compatible chat endpoint; per-request timeout, retries with back-off."""

    def __init__(
        self,
        base_url: str,
        model: str = "judge",
        max_new_tokens: int = 64,
        timeout_s: float = 60.0,
        retries: int = 2,
        api_key: str | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + ("" if base_url.rstrip("/").endswith("/v1") else "/v1")
        self.url += "/chat/completions"
        self.model, self.max_new_tokens = model, max_new_tokens
        self.timeout_s, self.retries, self.api_key = timeout_s, retries, api_key
        self.failed: OrderedDict[str, bool] = OrderedDict()
        """Request (prompt and cap) -> whether the endpoint refused it (``REFUSED_STATUS``),
        for the latest 1,024 requests that got no reply: ``fits`` reads it instead of
        asking again."""
        self._failed_lock = threading.Lock()

    def _one(self, chat: Chat, max_new_tokens: int, retries: int | None = None) -> str | None:
        body = json.dumps(
            {
                "model": self.model,
                "messages": chat,
                "max_tokens": max_new_tokens,
                "temperature": 0.0,
            }
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        tries = (self.retries if retries is None else retries) + 1
        refused = False
        for attempt in range(tries):
            try:
                req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    choice = json.loads(resp.read())["choices"][0]
                    text = str(choice["message"]["content"])
                    cut = finish_cut(choice.get("finish_reason"))
                    return text + CUT_MARK if cut else text
            except urllib.error.HTTPError as e:
                e.close()
                if e.code in REFUSED_STATUS:
                    refused = True
                    break
                if attempt + 1 < tries:
                    time.sleep(min(8.0, 0.5 * 2**attempt))
            except (urllib.error.URLError, TimeoutError, OSError, KeyError, ValueError, IndexError):
                if attempt + 1 < tries:
                    time.sleep(min(8.0, 0.5 * 2**attempt))
        with self._failed_lock:
            self.failed[_request_key(chat, max_new_tokens)] = refused
            while len(self.failed) > 1024:
                self.failed.popitem(last=False)
        return None

    def fits(self, prompt: Chat) -> bool:
        """Whether the endpoint takes ``prompt`` with the judge's token cap: False only
        when it refused it (``REFUSED_STATUS``), as it does a prompt longer than its
        model's context. A prompt that got no reply otherwise (a timeout, a server
        error) is not known to be refused: True. Asks once unless ``failed`` knows."""
        key = _request_key(prompt, self.max_new_tokens)
        with self._failed_lock:
            known = self.failed.get(key)
        if known is None:
            if self._one(prompt, self.max_new_tokens, retries=0) is not None:
                return True
            with self._failed_lock:
                known = self.failed.get(key, False)
        return not known

    def generate(
        self, prompts: Sequence[Chat], max_new_tokens: int | None = None
    ) -> list[str | None]:
        from concurrent.futures import ThreadPoolExecutor

        cap = max_new_tokens or self.max_new_tokens
        with ThreadPoolExecutor(max_workers=min(8, max(1, len(prompts)))) as ex:
            return list(ex.map(lambda chat: self._one(chat, cap), prompts))

    def close(self) -> None:
        pass


def _request_key(chat: Chat, max_new_tokens: int) -> str:
    return json.dumps([chat, max_new_tokens], sort_keys=True)


def parse_score(text: str | None) -> float | None:
    """'Score: 7' -> 0.7 (the last such mention). Small judges often drop the label:
    then a finished reply (not ending in ``CUT_MARK``) of at most ``SHORT_REPLY_CHARS``
    holding exactly one number counts ('The answer is 8.' -> 0.8). None when nothing in
    0..10 is found."""
    if text is None:
        return None
    found = labels(_SCORE_RE, text) or re.findall(_SIGN + r"\d+(?:\.\d+)?)\s*/\s*10\b", text)
    finished = not text.endswith(CUT_MARK)
    if not found and finished and len(text.strip()) <= SHORT_REPLY_CHARS:
        nums = re.findall(r"(?<![\w.])" + _SIGN + r"\d+(?:\.\d+)?)(?![\w.]*\d)", text)
        found = nums if len(nums) == 1 else []
    if not found:
        return None
    value = float(found[-1].replace("\u2212", "-"))
    return value / 10.0 if 0.0 <= value <= 10.0 else None


_SIGN = r"((?:(?<![\w.])[-\u2212])?"
"""An unlabelled number's group, opened with its minus sign (after no letter, digit or
point): ``Score: -10`` and ``-10/10`` read 1.0, now no verdict; ``7-3/10`` is 0.3."""


def reference(row: PromptRow) -> str | None:
    """The row's reference answer (its ground truth, when a non-blank string); None for
    a chat row asked open-ended. Decides which template the judge, the tournament's
    rubric writer and the audit's tournament probes use."""
    gold = row.ground_truth
    return gold if isinstance(gold, str) and gold.strip() else None


def judged_answer(response: str) -> str:
    """What of ``response`` the judge is shown: its answer (after the last ``</think>``),
    cut to ``MAX_JUDGED_CHARS``. A verdict, a game and the empty test all read this."""
    return answer_text(response)[:MAX_JUDGED_CHARS]


def judge_prompt(row: PromptRow, response: str, mode: str = "auto") -> Chat:
    """The judge's chat prompt for ``response`` to ``row``: the reference template when
    ``mode`` is 'reference', or 'auto' and the row has a reference answer; else the
    open-ended one. Only the answer (after ``</think>``) is shown, cut to
    ``MAX_JUDGED_CHARS``."""
    answer = judged_answer(response)
    if mode == "reference" or (mode == "auto" and reference(row) is not None):
        text = template("judge_reference").format(
            prompt=row.prompt_text, reference=str(row.ground_truth or ""), response=answer
        )
    else:
        text = template("judge_open").format(prompt=row.prompt_text, response=answer)
    return [{"role": "user", "content": text}]


class Judge:
    """Grades chat responses with a ``TextGenerator``; counts failures."""

    def __init__(self, gen: TextGenerator, mode: str = "auto", memo_size: int = 4096) -> None:
        if mode not in ("auto", "reference", "open"):
            raise ValueError(f"judge mode {mode!r} not allowed; use auto, reference or open")
        self.gen, self.mode = gen, mode
        self.counts: Counter[str] = Counter()
        self.memo: OrderedDict[str, str] = OrderedDict()
        """Judge prompt -> reply, least recently used first. Verdicts are greedy, so the
        same prompt gets the same reply: a group's identical answers, and answers seen
        before, are judged once (small policies repeat themselves a lot)."""
        self.memo_size = memo_size
        self.lock = threading.Lock()
        """Held by a caller for a whole ``score`` plus ``take_counts`` (or a tournament),
        so scorers sharing this judge take turns and read their own counts."""

    def prompt_for(self, row: PromptRow, response: str) -> Chat:
        return judge_prompt(row, response, self.mode)

    def replies(self, prompts: Sequence[Chat]) -> list[str | None]:
        """The judge's reply to each prompt: remembered ones from the memo, each distinct
        new prompt generated once. Failed replies (None) are not remembered."""
        keys = [json.dumps(p, sort_keys=True) for p in prompts]
        new = {k: p for k, p in zip(keys, prompts, strict=True) if k not in self.memo}
        self.counts["chat/judge_memo_hits"] += len(keys) - len(new)
        fresh = dict(zip(new, self.gen.generate(list(new.values())) if new else [], strict=True))
        out: list[str | None] = []
        for k in keys:
            reply = fresh[k] if k in fresh else self.memo[k]
            if reply is not None:
                self.memo[k] = reply
                self.memo.move_to_end(k)
            out.append(reply)
        while len(self.memo) > self.memo_size:
            self.memo.popitem(last=False)
        return out

    def score(self, rows: Sequence[PromptRow], responses: Sequence[str]) -> list[RewardResult]:
        empty = [is_blank(judged_answer(r)) for r in responses]
        todo = [i for i, e in enumerate(empty) if not e]
        replies = self.replies([self.prompt_for(rows[i], responses[i]) for i in todo])
        out = [RewardResult(0.0, "empty answer") for _ in responses]
        for i, reply in zip(todo, replies, strict=True):
            self.counts["chat/judged"] += 1
            if reply is None and self._answer_too_long(rows[i], responses[i]):
                self.counts["chat/judge_answer_too_long"] += 1
                out[i] = RewardResult(0.0, "answer too long for the judge's context")
                continue
            if reply is None:
                self.counts["chat/judge_failed"] += 1
                out[i] = RewardResult(0.0, "judge failed (timeout, error or a prompt too long)")
                continue
            s = parse_score(reply)
            if s is None:
                self.counts["chat/judge_unparsable"] += 1
                out[i] = RewardResult(0.0, f"judge answer unparsable: {reply[:60]!r}")
            else:
                out[i] = RewardResult(s, f"judge score {s * 10:g}/10")
        return out

    def _answer_too_long(self, row: PromptRow, response: str) -> bool:
        """Whether the judge could not read ``response`` because of its own length: the
        row's prompt fits the judge's context with an empty answer and not with this
        one (an engine counts its tokens; an endpoint refuses the longer request,
        ``HTTPGenerator.fits``). Such an answer scores 0 as judged, where a failure of
        the judge is no verdict (``verify`` leaves those out of its averages, so an
        answer made long enough would otherwise drop out of them)."""
        fits = getattr(self.gen, "fits", None)
        if fits is None:  # a generator that cannot tell
            return False
        return not fits(self.prompt_for(row, response)) and bool(fits(self.prompt_for(row, "")))

    def take_counts(self) -> Counter[str]:
        """Counts since the last call (the scorer accumulates them)."""
        c, self.counts = self.counts, Counter()
        return c

    def close(self) -> None:
        self.gen.close()
