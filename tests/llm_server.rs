//! A planted-bias OpenAI-compatible server for the LLM tests (std `TcpListener`, a thread per
//! connection, HTTP/1.1 keep-alive): `POST /v1/chat/completions` reads `income=I`, `years=Y` and
//! either `sex=Female|Male` or `name=NAME` (a name from [`FEMALE_NAMES`] or [`MALE_NAMES`]) from
//! the user message and answers with P(yes) = sigmoid([`planted_logit`]), given as the first
//! token's `top_logprobs` (the favourable mass split over "Yes" and " yes", 10% of the mass on
//! "Maybe", which a reader must normalise away). Faults are queued: each request takes the next
//! one (429 with `Retry-After`, 500, a slow answer, a body that is not JSON), and modes answer
//! without logprobs or with neither class. With `name_effects`, each name adds its own random
//! effect to the logit (the coverage simulation of clustered intervals).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// Names the planted model reads as female.
pub const FEMALE_NAMES: [&str; 3] = ["Anna", "Maria", "Sofia"];
/// Names the planted model reads as male.
pub const MALE_NAMES: [&str; 3] = ["John", "Peter", "David"];

/// The logit shift the planted model applies to a female applicant.
pub const FEMALE_SHIFT: f64 = -1.5;

/// The planted logit of P(yes): a known function of the features, minus 1.5 when female.
pub fn planted_logit(income: i64, years: i64, female: bool) -> f64 {
    0.8 * (income as f64 - 4.3) + 0.4 * (years as f64 - 4.1) + if female { FEMALE_SHIFT } else { 0.0 }
}

/// The rating shift the planted rater applies to a female applicant ([`planted_rating`]).
pub const FEMALE_RATING_SHIFT: f64 = -1.2;

/// The planted rater's expected rating on 0-10 ([`State::rating`]): a known function of the
/// features, 1.2 points lower when female; between 0.42 and 8.82 on the 10 × 10 grid, so never
/// clipped, and never a whole number (its first token's two alternatives both carry mass).
pub fn planted_rating(income: i64, years: i64, female: bool) -> f64 {
    5.0 + 0.5 * (income as f64 - 4.3) + 0.3 * (years as f64 - 4.1) + if female { FEMALE_RATING_SHIFT } else { 0.0 }
}

/// The rating shift the planted resume rater applies to a woman ([`resume_rating`]).
pub const RESUME_FEMALE_SHIFT: f64 = -1.0;

/// Bertrand & Mullainathan's (2004) female first names, as pipelines/resumes-rating.toml lists them.
pub const BM_FEMALE_NAMES: [&str; 18] = [
    "Allison", "Anne", "Carrie", "Emily", "Jill", "Kristen", "Laurie", "Meredith", "Sarah", "Aisha", "Ebony", "Keisha", "Kenya", "Lakisha",
    "Latonya", "Latoya", "Tamika", "Tanisha",
];

/// Bertrand & Mullainathan's (2004) male first names.
pub const BM_MALE_NAMES: [&str; 18] = [
    "Brad", "Brendan", "Brett", "Geoffrey", "Greg", "Jay", "Matthew", "Neil", "Todd", "Darnell", "Hakim", "Jamal", "Jermaine", "Kareem",
    "Leroy", "Rasheed", "Tremayne", "Tyrone",
];

/// The planted resume rater's expected rating on 0-10 ([`State::resume_rating`]) of a resume
/// prompt: 2.3 + 0.5 × its years of experience ("N years of experience", "1 year …", none stated: 0), 1 point lower when the
/// name after "Applicant: " is a woman's; `None` when the prompt says neither.
pub fn resume_rating(prompt: &str) -> Option<f64> {
    let name = prompt.lines().find_map(|l| l.trim().strip_prefix("Applicant: "))?.trim();
    let female = if BM_FEMALE_NAMES.contains(&name) {
        true
    } else if BM_MALE_NAMES.contains(&name) {
        false
    } else {
        return None;
    };
    // An entry-level resume states no years (scripts/make_resumes.py): 0.
    let years: f64 = match prompt.find(" years of experience").or_else(|| prompt.find(" year of experience")) {
        Some(at) => {
            let digits: String =
                prompt[..at].chars().rev().take_while(char::is_ascii_digit).collect::<Vec<_>>().into_iter().rev().collect();
            digits.parse().ok()?
        }
        None => 0.0,
    };
    Some(2.3 + 0.5 * years + if female { RESUME_FEMALE_SHIFT } else { 0.0 })
}

/// The planted pairwise chooser's logit in favour of the first listed candidate ([`pairwise_p_first`]).
pub const POSITION_LOGIT: f64 = 0.4;

/// The planted pairwise chooser's logit in favour of a man over a woman.
pub const MALE_CHOICE_LOGIT: f64 = 0.6;

/// P(the first listed is chosen) of the planted pairwise chooser ([`State::pairwise`]) for a
/// prompt naming "Applicant A: NAME" and "Applicant B: NAME" (Bertrand & Mullainathan's names):
/// sigmoid(POSITION_LOGIT + MALE_CHOICE_LOGIT × (A is a man − B is a man)); `None` when the prompt
/// names no two such applicants.
pub fn pairwise_p_first(prompt: &str) -> Option<f64> {
    let male = |label: &str| -> Option<f64> {
        let name = prompt.lines().find_map(|l| l.trim().strip_prefix(&format!("Applicant {label}: ")))?.trim();
        if BM_MALE_NAMES.contains(&name) {
            Some(1.0)
        } else if BM_FEMALE_NAMES.contains(&name) {
            Some(0.0)
        } else {
            None
        }
    };
    let logit = POSITION_LOGIT + MALE_CHOICE_LOGIT * (male("A")? - male("B")?);
    Some(1.0 / (1.0 + (-logit).exp()))
}

/// The planted ranker's logit in favour of the candidate listed first ([`ranking_picks`]).
pub const FIRST_LISTED_LOGIT: f64 = 0.4;

/// P(each listed candidate is picked) of the planted ranker ([`State::pairwise`]) for a prompt
/// listing "Candidate LABEL: NAME" lines (Bertrand & Mullainathan's names), in the order listed:
/// a softmax of FIRST_LISTED_LOGIT for the first listed plus MALE_CHOICE_LOGIT for each man; `None`
/// when the prompt lists no such candidates. Returns the labels and their probabilities.
pub fn ranking_picks(prompt: &str) -> Option<(Vec<String>, Vec<f64>)> {
    let mut labels = Vec::new();
    let mut logits = Vec::new();
    for line in prompt.lines() {
        let Some((label, name)) = line.trim().strip_prefix("Candidate ").and_then(|rest| rest.split_once(": ")) else { continue };
        let male = if BM_MALE_NAMES.contains(&name.trim()) {
            1.0
        } else if BM_FEMALE_NAMES.contains(&name.trim()) {
            0.0
        } else {
            return None;
        };
        logits.push(if labels.is_empty() { FIRST_LISTED_LOGIT } else { 0.0 } + MALE_CHOICE_LOGIT * male);
        labels.push(label.to_string());
    }
    if labels.len() < 2 {
        return None;
    }
    let total: f64 = logits.iter().map(|l: &f64| l.exp()).sum();
    Some((labels, logits.iter().map(|l| l.exp() / total).collect()))
}

/// The female logit shift at (income, years) when the server's shift varies
/// ([`State::varying`]): `FEMALE_SHIFT + 0.25 · ((7·income + 3·years) mod 5 − 2)`, whose mean over
/// the 10 × 10 grid of (income, years) is exactly `FEMALE_SHIFT` (each residue occurs 20 times).
pub fn varying_shift(income: i64, years: i64) -> f64 {
    FEMALE_SHIFT + 0.25 * ((7 * income + 3 * years).rem_euclid(5) as f64 - 2.0)
}

/// P(yes) of the planted model whose female shift varies with the features.
pub fn varying_p(income: i64, years: i64, female: bool) -> f64 {
    let logit = planted_logit(income, years, false) + if female { varying_shift(income, years) } else { 0.0 };
    1.0 / (1.0 + (-logit).exp())
}

/// P(yes) of the planted model.
pub fn planted_p(income: i64, years: i64, female: bool) -> f64 {
    1.0 / (1.0 + (-planted_logit(income, years, female)).exp())
}

/// The planted random effect on the logit of a name ([`State::name_effects`]): `sd` times a
/// standard normal drawn (Box–Muller) from a hash of (`seed`, the name), so that each seed gives
/// every name a new independent effect, the same for every prompt of one seed.
pub fn name_effect(seed: u64, sd: f64, name: &str) -> f64 {
    let mut h: u64 = 1469598103934665603 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(1099511628211);
    }
    let mut next = || {
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let (u1, u2) = (next(), next());
    sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The value a prompt gives as `KEY=VALUE` (letters and digits), e.g. the name of `name=Anna`.
pub fn prompt_field<'a>(prompt: &'a str, key: &str) -> Option<&'a str> {
    let at = prompt.find(&format!("{key}="))? + key.len() + 1;
    let rest = &prompt[at..];
    Some(rest[..rest.find(|c: char| !c.is_alphanumeric()).unwrap_or(rest.len())].trim())
}

/// One fault to answer a request with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// 429 with `Retry-After: SECONDS`.
    TooMany(u32),
    /// 500.
    ServerError,
    /// The answer after this many milliseconds.
    Slow(u64),
    /// A 200 whose body is not JSON.
    Malformed,
    /// 400 (a final refusal).
    BadRequest,
}

/// The server's state, shared with the test.
#[derive(Default)]
pub struct State {
    /// Faults for the next requests, in order.
    pub faults: Mutex<VecDeque<Fault>>,
    /// Requests received.
    pub requests: AtomicU64,
    /// Answers given (200s with an answer).
    pub answered: AtomicU64,
    /// Answer without logprobs.
    pub no_logprobs: AtomicBool,
    /// Answer "Maybe" with no class among the alternatives.
    pub neither: AtomicBool,
    /// The bearer token required (401 otherwise).
    pub key: Mutex<Option<String>>,
    /// Every prompt answered.
    pub prompts: Mutex<Vec<String>>,
    /// The female shift varies with the features ([`varying_p`]).
    pub varying: AtomicBool,
    /// Each name shown (`name=NAME`) adds its own random effect to the planted logit:
    /// `(seed, sd)` of [`name_effect`].
    pub name_effects: Mutex<Option<(u64, f64)>>,
    /// Answer with a rating on 0-10 ([`planted_rating`]): the first token's `top_logprobs` put
    /// 90% of the mass on the two whole numbers around it (so that their mean is the rating) and
    /// 10% on "Maybe".
    pub rating: AtomicBool,
    /// Answer a resume prompt with a rating on 0-10 ([`resume_rating`]), given as [`State::rating`]
    /// gives its ratings.
    pub resume_rating: AtomicBool,
    /// Answer a pairwise prompt "A" or "B" ([`pairwise_p_first`]): the first token's
    /// `top_logprobs` give "A" 90% of P(the first is chosen), "B" 90% of the rest, "Maybe" 10%;
    /// and a ranking prompt with the label of one candidate ([`ranking_picks`]), 90% of the mass
    /// over the labels as the ranker picks, "Maybe" 10%.
    pub pairwise: AtomicBool,
    /// Requests to `/v1/completions` answered.
    pub text_completions: AtomicU64,
    /// Milliseconds every answer waits before it is sent (so that requests overlap).
    pub delay_ms: AtomicU64,
    /// Requests being answered now.
    pub in_flight: AtomicU64,
    /// The most requests answered at once.
    pub max_in_flight: AtomicU64,
    /// Requests for what the server serves (`GET /v1/models`, `GET /props`), not counted in
    /// `requests`.
    pub identity_requests: AtomicU64,
    /// The model file `/props` names and the `system_fingerprint` every answer carries: a test
    /// changes them to stand for another model behind the same name ("" until set: the defaults
    /// below).
    pub served: Mutex<(String, String)>,
}

/// The model file `/props` names until a test changes it.
pub const MODEL_PATH: &str = "/models/planted-7b.Q4_K_M.gguf";

/// The `system_fingerprint` of every answer until a test changes it.
pub const FINGERPRINT: &str = "fp_planted_1";

impl State {
    /// (`/props`' model_path, the answers' `system_fingerprint`).
    fn served(&self) -> (String, String) {
        let (path, fingerprint) = self.served.lock().unwrap().clone();
        (if path.is_empty() { MODEL_PATH.into() } else { path }, if fingerprint.is_empty() { FINGERPRINT.into() } else { fingerprint })
    }
}

/// A running server.
pub struct Planted {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its state.
    pub state: Arc<State>,
}

impl Planted {
    /// Start a server on a free port.
    pub fn start() -> Planted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Planted { port, state }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Queue faults for the next requests.
    pub fn inject(&self, faults: &[Fault]) {
        self.state.faults.lock().unwrap().extend(faults.iter().copied());
    }
}

fn serve(stream: TcpStream, state: &State) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        let mut auth = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => auth = Some(value.trim().to_string()),
                _ => {}
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if request_line.starts_with("GET ") {
            state.identity_requests.fetch_add(1, Ordering::SeqCst);
            let (status, text) = identity(state, &request_line);
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n{text}",
                text.len()
            );
            if writer.write_all(response.as_bytes()).is_err() {
                return;
            }
            continue;
        }
        state.requests.fetch_add(1, Ordering::SeqCst);
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(state.delay_ms.load(Ordering::SeqCst)));
        let (status, headers, text) = answer(state, &request_line, auth.as_deref(), &body);
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n{headers}\r\n{text}",
            text.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// What the server says it serves: OpenAI's `GET /v1/models` (with llama.cpp's `meta`, and a
/// `created` that is the time of asking, as llama.cpp sets it) and llama.cpp's `GET /props`.
fn identity(state: &State, request_line: &str) -> (String, String) {
    let (model_path, _) = state.served();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if request_line.starts_with("GET /v1/models ") {
        let list = json!({"object": "list", "data": [{"id": PLANTED_MODEL, "object": "model", "created": now, "owned_by": "llamacpp",
            "meta": {"n_params": 7_000_000_000u64, "n_ctx_train": 4096, "size": 4_000_000_000u64}}]});
        return ("200 OK".into(), list.to_string());
    }
    if request_line.starts_with("GET /props ") {
        let props = json!({"model_path": model_path, "build_info": "b1-planted", "total_slots": 4,
            "default_generation_settings": {"n_ctx": 4096, "id_slot": now % 4}});
        return ("200 OK".into(), props.to_string());
    }
    ("404 Not Found".into(), json!({"error": "not found"}).to_string())
}

/// The model name `/v1/models` lists.
pub const PLANTED_MODEL: &str = "planted";

fn answer(state: &State, request_line: &str, auth: Option<&str>, body: &[u8]) -> (String, String, String) {
    let text_completion = request_line.starts_with("POST /v1/completions ");
    if !request_line.starts_with("POST /v1/chat/completions ") && !text_completion {
        return ("404 Not Found".into(), String::new(), json!({"error": "not found"}).to_string());
    }
    if let Some(key) = state.key.lock().unwrap().as_deref() {
        if auth != Some(format!("Bearer {key}").as_str()) {
            return ("401 Unauthorized".into(), String::new(), json!({"error": {"message": "invalid api key"}}).to_string());
        }
    }
    let fault = state.faults.lock().unwrap().pop_front();
    match fault {
        Some(Fault::TooMany(seconds)) => {
            return ("429 Too Many Requests".into(), format!("Retry-After: {seconds}\r\n"), json!({"error": "slow down"}).to_string())
        }
        Some(Fault::ServerError) => return ("500 Internal Server Error".into(), String::new(), "{\"error\": \"boom\"}".into()),
        Some(Fault::Malformed) => return ("200 OK".into(), String::new(), "{\"choices\": [".into()),
        Some(Fault::BadRequest) => return ("400 Bad Request".into(), String::new(), "{\"error\": \"bad request\"}".into()),
        Some(Fault::Slow(ms)) => std::thread::sleep(Duration::from_millis(ms)),
        None => {}
    }
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return ("400 Bad Request".into(), String::new(), json!({"error": e.to_string()}).to_string()),
    };
    let prompt = if text_completion {
        request["prompt"].as_str().unwrap_or("").to_string()
    } else {
        request["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("").to_string()
    };
    if state.pairwise.load(Ordering::SeqCst) && !text_completion {
        if let Some((labels, picks)) = ranking_picks(&prompt) {
            state.prompts.lock().unwrap().push(prompt.clone());
            state.answered.fetch_add(1, Ordering::SeqCst);
            let most = picks.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i);
            let mut top: Vec<Value> = labels.iter().zip(&picks).map(|(l, p)| json!({"token": l, "logprob": (0.9 * p).ln()})).collect();
            top.push(json!({"token": "Maybe", "logprob": 0.1f64.ln()}));
            let tokens = (prompt.len() / 4) as u64;
            let reply = json!({
                "id": "planted", "object": "chat.completion", "model": request["model"], "system_fingerprint": state.served().1,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": labels[most]}, "finish_reason": "length",
                    "logprobs": {"content": [{"token": labels[most], "logprob": -0.5, "top_logprobs": top}]}}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
            });
            return ("200 OK".into(), String::new(), reply.to_string());
        }
        let Some(p) = pairwise_p_first(&prompt) else {
            // One applicant (the model's own yes/no template, asked for its accuracy): P(yes) from
            // the planted resume rating.
            let Some(rating) = resume_rating(&prompt) else {
                return ("400 Bad Request".into(), String::new(), json!({"error": format!("cannot read {prompt:?}")}).to_string());
            };
            state.answered.fetch_add(1, Ordering::SeqCst);
            let logprobs = request["logprobs"] == json!(true);
            return ("200 OK".into(), String::new(), reply_body(&request["model"], &prompt, rating / 10.0, false, logprobs).to_string());
        };
        state.prompts.lock().unwrap().push(prompt.clone());
        state.answered.fetch_add(1, Ordering::SeqCst);
        let content = if p > 0.5 { "A" } else { "B" };
        let top = json!([
            {"token": "A", "logprob": (0.9 * p).ln()},
            {"token": "B", "logprob": (0.9 * (1.0 - p)).ln()},
            {"token": "Maybe", "logprob": 0.1f64.ln()},
        ]);
        let tokens = (prompt.len() / 4) as u64;
        let reply = json!({
            "id": "planted", "object": "chat.completion", "model": request["model"], "system_fingerprint": state.served().1,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length",
                "logprobs": {"content": [{"token": content, "logprob": -0.5, "top_logprobs": top}]}}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
        });
        return ("200 OK".into(), String::new(), reply.to_string());
    }
    let resume = state.resume_rating.load(Ordering::SeqCst);
    if (resume || state.rating.load(Ordering::SeqCst)) && !text_completion {
        let rating = if resume { resume_rating(&prompt) } else { read_prompt(&prompt).map(|(i, y, f)| planted_rating(i, y, f)) };
        let Some(rating) = rating else {
            return ("400 Bad Request".into(), String::new(), json!({"error": format!("cannot read {prompt:?}")}).to_string());
        };
        state.prompts.lock().unwrap().push(prompt.clone());
        state.answered.fetch_add(1, Ordering::SeqCst);
        let mut reply = rating_body(&request["model"], &prompt, rating);
        reply["system_fingerprint"] = json!(state.served().1);
        return ("200 OK".into(), String::new(), reply.to_string());
    }
    let effects = *state.name_effects.lock().unwrap();
    let p = match read_prompt(&prompt) {
        Some((income, years, female)) if state.varying.load(Ordering::SeqCst) => varying_p(income, years, female),
        Some((income, years, female)) if effects.is_some() => {
            let (seed, sd) = effects.unwrap_or_default();
            let effect = prompt_field(&prompt, "name").map_or(0.0, |name| name_effect(seed, sd, name));
            1.0 / (1.0 + (-(planted_logit(income, years, female) + effect)).exp())
        }
        Some((income, years, female)) => planted_p(income, years, female),
        None => match census_p(&prompt) {
            Some(p) => p,
            None => return ("400 Bad Request".into(), String::new(), json!({"error": format!("cannot read {prompt:?}")}).to_string()),
        },
    };
    state.prompts.lock().unwrap().push(prompt.clone());
    state.answered.fetch_add(1, Ordering::SeqCst);
    if text_completion {
        state.text_completions.fetch_add(1, Ordering::SeqCst);
        let alternatives = request["logprobs"].as_u64().filter(|_| !state.no_logprobs.load(Ordering::SeqCst));
        return ("200 OK".into(), String::new(), text_reply(&request["model"], &prompt, p, alternatives.is_some()).to_string());
    }
    let logprobs = request["logprobs"] == json!(true) && !state.no_logprobs.load(Ordering::SeqCst);
    let mut reply = reply_body(&request["model"], &prompt, p, state.neither.load(Ordering::SeqCst), logprobs);
    reply["system_fingerprint"] = json!(state.served().1);
    ("200 OK".into(), String::new(), reply.to_string())
}

/// The planted chat completion for `prompt` whose P(yes) is `p`: "Maybe" throughout when
/// `neither`; the first token's `top_logprobs` when `logprobs`.
pub fn reply_body(model: &Value, prompt: &str, p: f64, neither: bool, logprobs: bool) -> Value {
    let content = if neither {
        "Maybe"
    } else if p > 0.5 {
        "Yes"
    } else {
        "No"
    };
    let top = if neither {
        json!([{"token": "Maybe", "logprob": -0.1}, {"token": "Perhaps", "logprob": -2.4}])
    } else {
        json!([
            {"token": "Yes", "logprob": (0.6 * p).ln()},
            {"token": " yes", "logprob": (0.3 * p).ln()},
            {"token": "No", "logprob": (0.9 * (1.0 - p)).ln()},
            {"token": "Maybe", "logprob": 0.1f64.ln()},
        ])
    };
    let mut choice = json!({"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"});
    if logprobs {
        choice["logprobs"] = json!({"content": [{"token": content, "logprob": -0.5, "top_logprobs": top}]});
    }
    let tokens = (prompt.len() / 4) as u64;
    json!({
        "id": "planted", "object": "chat.completion", "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
    })
}

/// The planted chat completion for a rating `rating` on 0-10: the answer its nearest whole
/// number, the first token's alternatives the two whole numbers around it with 90% of the mass
/// split so that their mean is `rating`, and "Maybe" with 10%.
pub fn rating_body(model: &Value, prompt: &str, rating: f64) -> Value {
    let low = rating.floor();
    let part = rating - low;
    let mut top = vec![json!({"token": "Maybe", "logprob": 0.1f64.ln()})];
    for (value, mass) in [(low, 1.0 - part), (low + 1.0, part)] {
        if mass > 0.0 {
            top.push(json!({"token": format!("{value}"), "logprob": (0.9 * mass).ln()}));
        }
    }
    let content = format!("{}", rating.round());
    let choice = json!({"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length",
        "logprobs": {"content": [{"token": content, "logprob": -0.5, "top_logprobs": top}]}});
    let tokens = (prompt.len() / 4) as u64;
    json!({
        "id": "planted", "object": "chat.completion", "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
    })
}

/// The planted text completion (`/v1/completions`, OpenAI's legacy format: `text`, and
/// `logprobs.top_logprobs[0]` an object token → logprob) for `prompt` whose P(yes) is `p`.
pub fn text_reply(model: &Value, prompt: &str, p: f64, logprobs: bool) -> Value {
    let text = if p > 0.5 { " Yes" } else { " No" };
    let mut choice = json!({"index": 0, "text": text, "finish_reason": "length"});
    if logprobs {
        choice["logprobs"] = json!({
            "tokens": [text],
            "token_logprobs": [-0.5],
            "top_logprobs": [{" Yes": (0.6 * p).ln(), " yes": (0.3 * p).ln(), " No": (0.9 * (1.0 - p)).ln(), " Maybe": 0.1f64.ln()}],
        });
    }
    let tokens = (prompt.len() / 4) as u64;
    json!({
        "id": "planted", "object": "text_completion", "model": model, "choices": [choice],
        "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
    })
}

/// `income=I`, `years=Y` and the applicant's sex (stated or from the name) from a prompt.
pub fn read_prompt(prompt: &str) -> Option<(i64, i64, bool)> {
    let field = |key: &str| prompt_field(prompt, key);
    let income = field("income")?.parse().ok()?;
    let years = field("years")?.parse().ok()?;
    let female = match (field("sex"), field("name")) {
        (Some("Female"), _) => true,
        (Some("Male"), _) => false,
        (None, Some(name)) if FEMALE_NAMES.contains(&name) || BM_FEMALE_NAMES.contains(&name) => true,
        (None, Some(name)) if MALE_NAMES.contains(&name) || BM_MALE_NAMES.contains(&name) => false,
        _ => return None,
    };
    Some((income, years, female))
}

/// For a prompt of the bundled census template (`gender: Female|Male` on a line): P(yes) from a
/// fixed hash of the other lines, with the female logit shift.
pub fn census_p(prompt: &str) -> Option<f64> {
    let gender = prompt.lines().find_map(|l| l.trim().strip_prefix("- gender: "))?;
    let female = match gender.trim() {
        "Female" => true,
        "Male" => false,
        _ => return None,
    };
    let rest: String = prompt.lines().filter(|l| !l.contains("gender:")).collect::<Vec<_>>().join("\n");
    let mut h: u64 = 1469598103934665603;
    for b in rest.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(1099511628211);
    }
    let logit = (h % 1000) as f64 / 250.0 - 2.0 + if female { FEMALE_SHIFT } else { 0.0 };
    Some(1.0 / (1.0 + (-logit).exp()))
}
