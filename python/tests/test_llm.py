"""``fairpipe_rs.LLM``: an LLM endpoint audited in process gives the figures the CLI gives for the
same pipeline, against a planted-bias OpenAI-compatible server started here, whose P(yes) is a
known logistic function of income and years with a logit shift of -1.5 for female applicants."""

from __future__ import annotations

import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

import fairpipe_rs
from conftest import run_cli, without_timings

SHIFT = -1.5


def planted_p(income: int, years: int, female: bool) -> float:
    z = 0.8 * (income - 4.3) + 0.4 * (years - 4.1) + (SHIFT if female else 0.0)
    return 1.0 / (1.0 + math.exp(-z))


def read_applicant(prompt: str) -> tuple:
    """The income, years and sex (female) a prompt states."""
    m = re.search(r"income=(\d+); years=(\d+); sex=(Female|Male)", prompt)
    return int(m[1]), int(m[2]), m[3] == "Female"


def read_prompt(handler: BaseHTTPRequestHandler) -> str:
    """The request's last message."""
    body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
    return body["messages"][-1]["content"]


#: The pairwise chooser: P(the first listed is chosen) = σ(POSITION + GENDER × (A is a man − B is a man)).
POSITION, GENDER = 0.4, 0.6

PAIR_TEMPLATE = ("Income {{ income }}, {{ years }} years. Applicant A: sex={{ first.sex }}. Applicant B: sex={{ second.sex }}.\n"
                 "Which applicant should get the loan? Answer A or B.\n")


def p_first(prompt: str) -> float:
    """The planted chooser's P(A) for a pair prompt."""
    m = re.search(r"Applicant A: sex=(Female|Male)\. Applicant B: sex=(Female|Male)\.", prompt)
    return 1.0 / (1.0 + math.exp(-(POSITION + GENDER * ((m[1] == "Male") - (m[2] == "Male")))))


#: The ranker: a softmax over the candidates listed of FIRST_LISTED for the first plus GENDER per man.
FIRST_LISTED = 0.4

RANKING_TEMPLATE = ("Income {{ income }}, {{ years }} years.\n{% for c in candidates %}Candidate {{ c.label }}: {{ c.name }}, sex={{ c.sex }}\n"
                    "{% endfor %}Which candidate should get the loan? Answer with the number only.\n")

#: The names of the ranking's candidates, two per sex.
RANK_NAMES = {"sex": {"Female": ["Anna", "Maria"], "Male": ["John", "Peter"]}}


def picks(prompt: str) -> list:
    """The planted ranker's (label, P(picked)) for a ranking prompt, in the order listed."""
    listed = re.findall(r"Candidate (\w+): \w+, sex=(Female|Male)", prompt)
    logits = [(FIRST_LISTED if i == 0 else 0.0) + GENDER * (sex == "Male") for i, (_, sex) in enumerate(listed)]
    total = sum(math.exp(z) for z in logits)
    return [(label, math.exp(z) / total) for (label, _), z in zip(listed, logits)]


def send_answer(handler: BaseHTTPRequestHandler, content: str, top: list) -> None:
    """Answer a chat completion with `content` and the first token's alternatives `top`."""
    reply = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "logprobs": {"content": [{"token": content, "logprob": -0.5, "top_logprobs": top}]}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 1},
    }
    data = json.dumps(reply).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class Planted(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    asked: list = []

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        prompt = read_prompt(self)
        Planted.asked.append(prompt)
        if "Candidate " in prompt:
            ranked = picks(prompt)
            best = max(ranked, key=lambda c: c[1])[0]
            send_answer(self, best, [{"token": label, "logprob": math.log(p)} for label, p in ranked])
            return
        if "Applicant A:" in prompt:
            p = p_first(prompt)
            send_answer(self, "A" if p > 0.5 else "B", [{"token": "A", "logprob": math.log(p)}, {"token": "B", "logprob": math.log(1 - p)}])
            return
        p = planted_p(*read_applicant(prompt))
        top = [
            {"token": "Yes", "logprob": math.log(0.9 * p)},
            {"token": "No", "logprob": math.log(0.9 * (1 - p))},
            {"token": "Maybe", "logprob": math.log(0.1)},
        ]
        content = "Yes" if p > 0.5 else "No"
        send_answer(self, content, top)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Planted)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


TEMPLATE = "Applicant: income={{ income }}; years={{ years }}; sex={{ sex }}.\nShould the loan be approved? Answer yes or no.\n"


def applicants() -> pd.DataFrame:
    rows = [(i, y, s, "yes" if i + y >= 9 else "no") for i in range(10) for y in range(10) for s in ("Female", "Male")]
    return pd.DataFrame(rows, columns=["income", "years", "sex", "label"])

def cli_pipeline(name: str, server: str, audits: tuple) -> str:
    """A pipeline auditing the planted server on applicants.csv (beside it) with the stages
    `audits` (group_metrics, check) over all rows."""
    text = f"""[pipeline]
name = "{name}"
seed = 0

[stages.data]
kind = "load"
path = "applicants.csv"
label = "label"
favourable = "yes"
protected = ["sex"]

[stages.model]
kind = "load_model"
data = "data"
llm = {{ base_url = "{server}", model = "planted", prompt = "prompt.j2", cache = "", concurrency = 4, answers = {{ favourable = ["yes", "Yes"], unfavourable = ["no", "No"] }} }}
"""
    for audit in audits:
        text += f'\n[stages.{audit}]\nkind = "{audit}"\nmodel = "model"\nsplit = "all"\n'
    return text


def cli_summary(tmp_path, frame: pd.DataFrame, pipeline: str) -> dict:
    """The summary.json of the fairpipe CLI's run of `pipeline` (written as p.toml) on `frame`
    (written beside it as applicants.csv, which `cli_pipeline` loads)."""
    frame.to_csv(tmp_path / "applicants.csv", index=False)
    (tmp_path / "p.toml").write_text(pipeline)
    done = run_cli("run", str(tmp_path / "p.toml"), "--out", str(tmp_path / "out"), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((tmp_path / "out" / "summary.json").read_text())



def test_the_python_audit_of_an_llm_equals_the_cli_and_the_planted_truth(server, tmp_path):
    (tmp_path / "prompt.j2").write_text(TEMPLATE)
    frame = applicants()
    llm = fairpipe_rs.LLM(base_url=server, model="planted", prompt=tmp_path / "prompt.j2", cache="", concurrency=4)
    assert dict(llm)["llm"]["prompt"] == str(tmp_path / "prompt.j2")
    run = fairpipe_rs.audit(frame, llm, label="label", protected="sex", favourable="yes", checks=["group_metrics", "check"])
    check = run.figures("check")
    # The planted truth: a row flips when its (income, years) cell's planted label changes with sex.
    flips = sum(2 for i in range(10) for y in range(10) if (planted_p(i, y, True) > 0.5) != (planted_p(i, y, False) > 0.5))
    assert flips > 0
    assert check["checked"] == 200
    assert check["discriminatory"] == flips
    [shift] = check["logit_shift"]
    assert (shift["attribute"], shift["value"], shift["reference"]) == ("sex", "Male", "Female")
    assert shift["mean"] == pytest.approx(-SHIFT, abs=1e-9)
    for group, female in (("Female", True), ("Male", False)):
        selected = sum(1 for i in range(10) for y in range(10) if planted_p(i, y, female) > 0.5)
        [g] = [g for g in run.figures("group_metrics")["groups"] if g["group"] == group]
        assert g["selection_rate"] == pytest.approx(selected / 100, abs=1e-12)

    # The CLI on the same rows, template and server.
    cli = cli_summary(tmp_path, frame, cli_pipeline("llm-python", server, ("group_metrics", "check")))
    for stage in ("group_metrics", "check"):
        assert without_timings(run.figures(stage)) == without_timings(cli["stages"][stage]), stage
    assert run.figures("model")["remote"]["llm"]["prompts_sent"] == cli["stages"]["model"]["remote"]["llm"]["prompts_sent"]


def test_an_llm_audit_is_sized_for_an_llm_and_says_its_prompts_first(server, tmp_path, capfd):
    """The estimate of an LLM audit that sizes none stops at ±0.02 (not the standard 200,000
    prompts), and the prompts are said before the first is sent."""
    (tmp_path / "prompt.j2").write_text(TEMPLATE)
    llm = fairpipe_rs.LLM(base_url=server, model="planted", prompt=tmp_path / "prompt.j2", cache="", concurrency=4,
                          price={"prompt": 2.0, "completion": 8.0})
    run = fairpipe_rs.audit(applicants(), llm, label="label", protected="sex", favourable="yes", checks=["estimate"], seed=3)
    said = capfd.readouterr().err
    assert "this audit asks the LLM at most 16,000 prompts" in said, said
    assert "stopping at ±0.02" in said and "prompt tokens" in said, said
    # With `price`: the template's tokens of every prompt at least, one answer token each at most.
    prompt_cost = 16000 * (len(TEMPLATE) // 4) * 2.0 / 1e6
    assert f"at `price`: at least {prompt_cost:.2f} for those prompt tokens, at most {16000 * 8.0 / 1e6:.2f} for the answers" in said, said
    usage = run.figures("model")["remote"]["llm"]
    assert usage["cost"] == pytest.approx((usage["prompt_tokens"] * 2.0 + usage["completion_tokens"] * 8.0) / 1e6, abs=1e-12)
    assert usage["prompt_tokens"] > 0, usage
    estimate = run.figures("estimate")
    stop = estimate["precision"]
    assert stop["asked"] == 0.02 and stop["met"] and stop["reached"] <= 0.02, stop
    assert estimate["samples"] == stop["observations"] < 250 * 32, estimate
    assert estimate["ci95"] == stop["ci95"]
    # Sized by the caller: left as given.
    run = fairpipe_rs.audit(
        applicants(), llm, label="label", protected="sex", favourable="yes", checks=["estimate"], options={"estimate": {"trials": 3, "samples": 10}}
    )
    assert run.figures("estimate")["samples"] == 30 and "precision" not in run.figures("estimate")


def constant_answers(plan: str, answer: str) -> str:
    """A responses file answering every request of the plan `plan` (`fairpipe llm plan`'s lines)
    with `answer` at P = 0.95, in the Batch API's output format."""
    other = "No" if answer == "Yes" else "Yes"
    top = [{"token": answer, "logprob": math.log(0.95)}, {"token": other, "logprob": math.log(0.05)}]
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "logprobs": {"content": [{"token": answer, "logprob": math.log(0.95), "top_logprobs": top}]}}]}
    lines = [json.loads(line)["custom_id"] for line in plan.splitlines() if line.strip()]
    assert lines, "the plan lists no request"
    return "".join(json.dumps({"custom_id": i, "response": {"status_code": 200, "body": body}}) + "\n" for i in lines)


def test_each_llm_audit_in_one_process_answers_from_its_own_source(server, tmp_path):
    """Issue 57: a responses file is the run's, not the process's. In one Python process the CLI
    runs an audit from a responses file (every answer "Yes"), then the Python API audits the same
    model live (the planted server's answers), then the CLI runs from a second file (every answer
    "No"), then live again through the CLI: each gets its own answers."""
    (tmp_path / "prompt.j2").write_text(TEMPLATE)
    frame = applicants()
    frame.to_csv(tmp_path / "applicants.csv", index=False)
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(cli_pipeline("llm-sources", server, ("group_metrics",)))
    # The plan, made by the binary (another process).
    done = run_cli("llm", "plan", str(pipeline), "--out", str(tmp_path / "requests.jsonl"))
    assert done.returncode == 0, done.stdout + done.stderr
    plan = (tmp_path / "requests.jsonl").read_text()
    (tmp_path / "yes.jsonl").write_text(constant_answers(plan, "Yes"))
    (tmp_path / "no.jsonl").write_text(constant_answers(plan, "No"))
    requests = len(plan.splitlines())

    def cli_run(out: str, *extra: str) -> dict:
        code = fairpipe_rs._native.cli(["fairpipe", "run", str(pipeline), "--out", str(tmp_path / out), "--quiet", *extra])
        assert code == 0, f"fairpipe run {extra} exited {code}"
        return json.loads((tmp_path / out / "summary.json").read_text())["stages"]

    def selection(groups: list) -> dict:
        return {g["group"]: g["selection_rate"] for g in groups}

    planted = {
        group: sum(1 for i in range(10) for y in range(10) if planted_p(i, y, female) > 0.5) / 100
        for group, female in (("Female", True), ("Male", False))
    }
    assert set(planted.values()) - {0.0, 1.0}, "the planted rates differ from both files' answers"

    yes = cli_run("yes", "--responses", str(tmp_path / "yes.jsonl"))
    assert selection(yes["group_metrics"]["groups"]) == {"Female": 1.0, "Male": 1.0}
    assert yes["model"]["remote"]["llm"]["from_responses"] == requests

    asked = len(Planted.asked)
    llm = fairpipe_rs.LLM(base_url=server, model="planted", prompt=tmp_path / "prompt.j2", cache="", concurrency=4)
    live = fairpipe_rs.audit(frame, llm, label="label", protected="sex", favourable="yes", checks=["group_metrics"])
    assert selection(live.figures("group_metrics")["groups"]) == pytest.approx(planted, abs=1e-12)
    assert live.figures("model")["remote"]["llm"]["from_responses"] == 0
    assert len(Planted.asked) > asked, "the live audit asked the server"

    no = cli_run("no", "--responses", str(tmp_path / "no.jsonl"))
    assert selection(no["group_metrics"]["groups"]) == {"Female": 0.0, "Male": 0.0}
    assert no["model"]["remote"]["llm"]["from_responses"] == requests

    again = cli_run("live")
    assert selection(again["group_metrics"]["groups"]) == pytest.approx(planted, abs=1e-12)
    assert again["model"]["remote"]["llm"]["from_responses"] == 0


RATING_SHIFT = -1.2


def planted_rating(income: int, years: int, female: bool) -> float:
    return 5.0 + 0.5 * (income - 4.3) + 0.3 * (years - 4.1) + (RATING_SHIFT if female else 0.0)


class PlantedRater(BaseHTTPRequestHandler):
    """Rates on 0-10: the first token's alternatives are the two whole numbers around the planted
    rating, weighted so that their mean is the rating, and "Maybe"."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        income, years, female = read_applicant(read_prompt(self))
        rating = planted_rating(income, years, female)
        low = math.floor(rating)
        part = rating - low
        top = [{"token": "Maybe", "logprob": math.log(0.1)}]
        top += [{"token": str(v), "logprob": math.log(0.9 * w)} for v, w in ((low, 1 - part), (low + 1, part)) if w > 0]
        content = str(round(rating))
        send_answer(self, content, top)


def test_a_rating_scale_gives_the_planted_score_shift_as_the_cli_does(tmp_path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), PlantedRater)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    server = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        (tmp_path / "prompt.j2").write_text(TEMPLATE)
        frame = applicants()
        llm = fairpipe_rs.LLM(base_url=server, model="planted", prompt=tmp_path / "prompt.j2", cache="", concurrency=4,
                              answers={"scale": [0, 10]})
        run = fairpipe_rs.audit(frame, llm, label="label", protected="sex", favourable="yes", checks=["check"])
        check = run.figures("check")
        [shift] = check["score_shift"]
        assert (shift["attribute"], shift["value"], shift["reference"], shift["pairs"]) == ("sex", "Male", "Female", 200)
        assert shift["mean"] == pytest.approx(-RATING_SHIFT, abs=1e-12)
        assert check["logit_shift"] == []
        flips = sum(2 for i in range(10) for y in range(10)
                    if (planted_rating(i, y, True) > 5) != (planted_rating(i, y, False) > 5))
        assert flips > 0 and check["discriminatory"] == flips
        # The CLI on the same rows, template and server.
        text = cli_pipeline("llm-rating", server, ("check",)).replace(
            'answers = { favourable = ["yes", "Yes"], unfavourable = ["no", "No"] }', "answers = { scale = [0, 10] }")
        assert "scale = [0, 10]" in text
        cli = cli_summary(tmp_path, frame, text)
        assert without_timings(run.figures("check")) == without_timings(cli["stages"]["check"])
    finally:
        httpd.shutdown()


def test_pairwise_choices_from_python_equal_the_cli_and_the_planted_effects(server, tmp_path):
    """``checks=["pairwise"]``: each applicant under both sexes in one prompt, in both orders, gives
    the planted chooser's position effect and each sex's chosen rate, as the CLI's stage does."""
    (tmp_path / "prompt.j2").write_text(TEMPLATE)
    (tmp_path / "pair.j2").write_text(PAIR_TEMPLATE)
    frame = applicants()
    llm = fairpipe_rs.LLM(base_url=server, model="planted", prompt=tmp_path / "prompt.j2", cache="", concurrency=4)
    run = fairpipe_rs.audit(frame, llm, label="label", protected="sex", favourable="yes", checks=["pairwise"],
                            options={"pairwise": {"prompt": tmp_path / "pair.j2"}})
    figures = run.figures("pairwise")
    assert (figures["pairs"], figures["prompts"], figures["unparsed_pairs"]) == (200, 400, 0), figures
    sigma = lambda z: 1.0 / (1.0 + math.exp(-z))  # noqa: E731
    woman_first, man_first = sigma(POSITION - GENDER), sigma(POSITION + GENDER)
    assert figures["position_effect"] == pytest.approx((woman_first + man_first) / 2 - 0.5, abs=1e-12)
    man_wins = ((1 - woman_first) + man_first) / 2
    [versus] = figures["versus_reference"]
    assert (versus["value"], versus["reference"]) == ("Male", "Female")
    assert versus["rate"] == pytest.approx(man_wins, abs=1e-12) and versus["ratio"] == pytest.approx(man_wins / (1 - man_wins), abs=1e-12)
    # The CLI on the same rows, templates and server.
    text = cli_pipeline("llm-pairwise", server, ()) + '\n[stages.pairwise]\nkind = "pairwise"\nmodel = "model"\nprompt = "pair.j2"\n'
    cli = cli_summary(tmp_path, frame, text)
    assert without_timings(figures) == without_timings(cli["stages"]["pairwise"])
    # Asked of a model that is not an LLM, or without its template: said before anything runs.
    with pytest.raises(ValueError, match="pair template"):
        fairpipe_rs.audit(frame, llm, label="label", protected="sex", favourable="yes", checks=["pairwise"])


def test_ranking_from_python_equals_the_cli_and_the_planted_ranker(server, tmp_path):
    """``checks=["ranking"]``: each applicant listed as four candidates, two per sex under their own
    names, in every rotation: each sex's share of the picks equals the planted ranker's to 1e-12,
    the first position's share too, and the figures equal the CLI's stage."""
    (tmp_path / "prompt.j2").write_text(TEMPLATE)
    (tmp_path / "list.j2").write_text(RANKING_TEMPLATE)
    frame = applicants()
    llm = fairpipe_rs.LLM(base_url=server, model="planted", prompt=tmp_path / "prompt.j2", cache="", concurrency=4, names=RANK_NAMES)
    run = fairpipe_rs.audit(frame, llm, label="label", protected="sex", favourable="yes", checks=["ranking"],
                            options={"ranking": {"prompt": tmp_path / "list.j2"}})
    figures = run.figures("ranking")
    assert (figures["rankings"], figures["prompts"], figures["unparsed_rankings"]) == (200, 800, 0), figures
    # Over the four rotations a man is first twice and a woman twice.
    exp = math.exp
    man_first = (exp(FIRST_LISTED + GENDER) + exp(GENDER)) / (exp(FIRST_LISTED + GENDER) + exp(GENDER) + 2)
    woman_first = 2 * exp(GENDER) / (exp(FIRST_LISTED) + 2 * exp(GENDER) + 1)
    male_share = (man_first + woman_first) / 2
    shares = {s["value"]: s for s in figures["top_share"]}
    assert shares["Male"]["share"] == pytest.approx(male_share, abs=1e-12)
    assert shares["Female"]["share"] == pytest.approx(1 - male_share, abs=1e-12)
    assert shares["Male"]["parity"] == 0.5
    first = (exp(FIRST_LISTED + GENDER) / (exp(FIRST_LISTED + GENDER) + exp(GENDER) + 2)
             + exp(FIRST_LISTED) / (exp(FIRST_LISTED) + 2 * exp(GENDER) + 1)) / 2
    assert figures["first_position_effect"] == pytest.approx(first - 0.25, abs=1e-12)
    # The CLI on the same rows, templates and server.
    names = 'names = { sex = { Female = ["Anna", "Maria"], Male = ["John", "Peter"] } }, '
    text = cli_pipeline("llm-ranking", server, ()).replace("cache = \"\", ", "cache = \"\", " + names)
    text += '\n[stages.ranking]\nkind = "ranking"\nmodel = "model"\nprompt = "list.j2"\n'
    cli = cli_summary(tmp_path, frame, text)
    assert without_timings(figures) == without_timings(cli["stages"]["ranking"])
    with pytest.raises(ValueError, match="list.j2"):
        fairpipe_rs.audit(frame, llm, label="label", protected="sex", favourable="yes", checks=["ranking"])
