//! A large language model behind an OpenAI-compatible endpoint (`POST …/v1/chat/completions`),
//! audited as a classifier: each row is rendered into a prompt ([`prompt`]), asked
//! ([`client`], several requests in flight, retried, within the run's budgets), answered from the
//! run's memory or the persistent cache ([`cache`]) when the same request was asked before, and
//! read as P(favourable) ([`score`]) from the first answer token's log-probabilities, from sampled
//! answers, or as a label. The block's keys are [`config::LlmConfig`].

pub mod cache;
pub mod client;
pub mod config;
pub mod error;
pub mod grammar;
pub mod offline;
pub mod prompt;
pub mod score;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use fairpipe_abi::domain::Domain;
use serde_json::{json, Value};

use self::cache::{request_key, ResponseCache};
use self::client::{AskError, Budgets, Client, Reply};
use self::config::{Answers, Api, LlmConfig, ScoreFrom};
use self::error::LlmError;
use self::offline::{AnswerSource, Recorder, Responses};
use self::prompt::Renderer;
use self::score::{
    first_rating, first_word_class, first_word_label, from_logprobs, from_samples, label_shares_from_logprobs, label_shares_from_samples,
    normalised, rating_from_logprobs, rating_from_samples, Class,
};
use crate::error::ModelError;
use crate::remote::latency_percentiles;
use crate::retry::RetryPolicy;
use crate::{EndpointIdentity, LlmUsage, Model, RemoteUsage};

/// Unparsed prompts quoted in the error that stops a run.
const QUOTED_PROMPTS: usize = 5;

/// Characters of a prompt quoted in a message.
const PROMPT_QUOTE: usize = 120;

/// An LLM as a model under test.
pub struct LlmModel {
    domain: Domain,
    renderer: Renderer,
    client: Client,
    cache: Option<ResponseCache>,
    config: LlmConfig,
    key_env_value: bool,
    /// Answers of this run by request key (identical prompts are asked once).
    memo: Mutex<HashMap<u128, Reply>>,
    /// Held while requests are sent, so that callers on several threads (a stage's rayon chunks)
    /// together keep to `concurrency` requests in flight and never ask the same prompt at once.
    sending: Mutex<()>,
    /// Prompts whose answers were neither class (counted once each).
    unparsed: Mutex<HashSet<u128>>,
    rows_asked: AtomicU64,
    prompts_sent: AtomicU64,
    cache_hits: AtomicU64,
    repeats: AtomicU64,
    /// `fairpipe llm plan`: requests are written here, not sent, and answered as undecided.
    recorder: Option<Recorder>,
    /// `fairpipe run --responses`: answers read from this file, never from a server.
    responses: Option<Responses>,
    from_responses: AtomicU64,
    /// What the endpoint said of its model at load (`None` for a plan or a responses run).
    identity: Option<EndpointIdentity>,
    /// The cache holds answers stored while the endpoint said something else of its model.
    cache_from_another_model: bool,
    /// `llm.validity`'s comparison, once made ([`LlmModel::check_validity`]).
    validity: Mutex<Option<crate::model::Validity>>,
}

impl std::fmt::Debug for LlmModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LlmModel({} at {})", self.config.model, self.client.url())
    }
}

/// The start of a prompt, for messages.
fn quoted(prompt: &str) -> String {
    let one_line = prompt.replace('\n', " ");
    match one_line.char_indices().nth(PROMPT_QUOTE) {
        Some((end, _)) => format!("{:?}…", &one_line[..end]),
        None => format!("{one_line:?}"),
    }
}

/// One request a row needs: its key, body and prompt.
struct Request {
    key: u128,
    body: Bytes,
    prompt: String,
}

impl LlmModel {
    /// The model the `llm` block describes, for rows of `domain`; `dir` is the pipeline's folder
    /// (the template and the cache are relative to it); `answers`: where its answers come from
    /// (the run's choice). The template is checked on `first_row`: it must render, and say each
    /// protected value.
    pub fn load(
        config: &LlmConfig,
        dir: &Path,
        domain: &Domain,
        first_row: Option<&[f64]>,
        answers: &AnswerSource,
    ) -> Result<LlmModel, ModelError> {
        let fail = |message: String| ModelError::Remote { url: config.base_url.clone(), message };
        let failed = |e: LlmError| e.at(&config.base_url);
        let renderer =
            Renderer::load(&dir.join(&config.prompt), &config.prompt.display().to_string(), domain, &config.names).map_err(failed)?;
        if let Some(row) = first_row {
            renderer.check_protected_said(row).map_err(failed)?;
        }
        let key = match &config.api_key_env {
            Some(var) => {
                Some(std::env::var(var).map_err(|_| fail(format!("`llm.api_key_env`: the environment variable {var} is not set")))?)
            }
            None => None,
        };
        let key_env_value = key.is_some();
        let budgets = Budgets { max_requests: config.max_requests, max_tokens: config.max_tokens_total };
        let client = Client::new(
            &config.base_url,
            config.api.path(),
            key,
            Duration::from_secs_f64(config.timeout_s),
            RetryPolicy { first_backoff: Duration::from_secs_f64(config.backoff_s), ..RetryPolicy::LLM.with_retries(config.retries) },
            config.concurrency,
            budgets,
        )
        .map_err(failed)?;
        let (recorder, responses) = match answers {
            AnswerSource::Live => (None, None),
            AnswerSource::Record(path) => (Some(Recorder::create(path).map_err(failed)?), None),
            AnswerSource::Responses(path) => (None, Some(Responses::read(path, config.scores == ScoreFrom::Logprobs).map_err(failed)?)),
        };
        // Neither a plan's placeholders nor a responses file's answers go into the cache.
        let cache = match config.cache.as_deref().filter(|p| !p.as_os_str().is_empty() && recorder.is_none() && responses.is_none()) {
            Some(path) => Some(ResponseCache::open(&dir.join(path)).map_err(failed)?),
            None => None,
        };
        // Who answers, asked once before any prompt (a plan and a responses run reach no server);
        // the cache records it, and says whether its answers came from another model.
        let identity = (recorder.is_none() && responses.is_none()).then(|| client.identity(&config.base_url, &config.model));
        let mut cache_from_another_model = false;
        if let (Some(cache), Some(now)) = (&cache, identity.as_ref().and_then(EndpointIdentity::hash)) {
            let before = cache.served().map_err(failed)?;
            cache_from_another_model = before.iter().any(|b| *b != now);
            cache.record_served(&now).map_err(failed)?;
        }
        Ok(LlmModel {
            domain: domain.clone(),
            renderer,
            client,
            cache,
            config: config.clone(),
            key_env_value,
            memo: Mutex::new(HashMap::new()),
            sending: Mutex::new(()),
            unparsed: Mutex::new(HashSet::new()),
            rows_asked: AtomicU64::new(0),
            prompts_sent: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            repeats: AtomicU64::new(0),
            recorder,
            responses,
            from_responses: AtomicU64::new(0),
            identity,
            cache_from_another_model,
            validity: Mutex::new(None),
        })
    }

    /// The prompt of one encoded row.
    pub fn prompt(&self, row: &[f64]) -> Result<String, ModelError> {
        self.renderer.render(row).map_err(|e| self.fail(e.to_string()))
    }

    fn fail(&self, message: String) -> ModelError {
        ModelError::Remote { url: self.client.url().to_string(), message }
    }

    /// The request for `prompt` (its `sample`-th answer), whose answer is one of `answers`: a chat
    /// completion's, or a text completion's with `api = "completions"`; with `llm.grammar`, the
    /// grammar allowing only those answers.
    pub fn request_body(&self, prompt: &str, sample: u32, answers: &Answers) -> Value {
        let logprobs = self.config.scores == ScoreFrom::Logprobs;
        let mut body = match self.config.api {
            Api::Chat => {
                let mut messages = Vec::new();
                if let Some(system) = &self.config.system {
                    messages.push(json!({"role": "system", "content": system}));
                }
                messages.push(json!({"role": "user", "content": prompt}));
                let mut body = json!({
                    "model": self.config.model,
                    "messages": messages,
                    "temperature": self.config.temperature(),
                    "max_tokens": self.config.max_tokens,
                });
                if logprobs {
                    body["logprobs"] = json!(true);
                    body["top_logprobs"] = json!(self.config.top_logprobs);
                }
                body
            }
            Api::Completions => {
                let text = match &self.config.system {
                    Some(system) => format!("{system}\n\n{prompt}"),
                    None => prompt.to_string(),
                };
                let mut body = json!({
                    "model": self.config.model,
                    "prompt": text,
                    "temperature": self.config.temperature(),
                    "max_tokens": self.config.max_tokens,
                });
                if logprobs {
                    body["logprobs"] = json!(self.config.top_logprobs);
                }
                body
            }
        };
        match (self.config.seed, self.config.scores) {
            (Some(seed), _) => body["seed"] = json!(seed + u64::from(sample)),
            (None, ScoreFrom::Samples) => body["seed"] = json!(sample),
            _ => {}
        }
        if self.config.grammar {
            body["grammar"] = json!(grammar::gbnf(answers));
        }
        body
    }

    /// The requests of one prompt, answered with one of `answers`.
    fn requests(&self, prompt: String, answers: &Answers) -> Result<Vec<Request>, ModelError> {
        (0..self.config.samples_per_prompt())
            .map(|sample| {
                let body = serde_json::to_vec(&self.request_body(&prompt, sample, answers)).map_err(|e| self.fail(e.to_string()))?;
                Ok(Request { key: request_key(self.client.url(), &body), body: Bytes::from(body), prompt: prompt.clone() })
            })
            .collect()
    }

    /// Answer every request not answered yet in this run: from the cache, else from the server
    /// with up to `concurrency` requests in flight.
    fn answer(&self, requests: &[&Request]) -> Result<(), ModelError> {
        let mut todo: Vec<&Request> = Vec::new();
        {
            let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
            let mut seen = HashSet::new();
            for request in requests {
                if memo.contains_key(&request.key) || !seen.insert(request.key) {
                    self.repeats.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                if let Some(cache) = &self.cache {
                    if let Some(reply) = cache.get(request.key).map_err(|e| self.fail(e.to_string()))? {
                        self.cache_hits.fetch_add(1, Ordering::Relaxed);
                        memo.insert(request.key, reply);
                        continue;
                    }
                }
                todo.push(request);
            }
        }
        if todo.is_empty() {
            return Ok(());
        }
        if self.recorder.is_some() || self.responses.is_some() {
            return self.answer_offline(&todo);
        }
        let _sending = self.sending.lock().unwrap_or_else(|p| p.into_inner());
        // Another caller may have answered some of `todo` while this one waited its turn.
        let todo: Vec<&Request> = {
            let memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
            let (answered, todo): (Vec<&Request>, Vec<&Request>) = todo.into_iter().partition(|r| memo.contains_key(&r.key));
            self.repeats.fetch_add(answered.len() as u64, Ordering::Relaxed);
            todo
        };
        if todo.is_empty() {
            return Ok(());
        }
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let failure: Mutex<Option<ModelError>> = Mutex::new(None);
        let workers = self.config.concurrency.clamp(1, todo.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(request) = todo.get(i) else { break };
                        let what = format!("the prompt {}", quoted(&request.prompt));
                        let outcome = self.client.ask(&request.body, &what, self.config.scores == ScoreFrom::Logprobs);
                        let stored = outcome.map_err(|e| match e {
                            AskError::Budget(budget) => self.fail(format!(
                                "{budget}: the run stops rather than send more ({} prompts answered by the server, {} from the cache)",
                                self.prompts_sent.load(Ordering::Relaxed),
                                self.cache_hits.load(Ordering::Relaxed)
                            )),
                            AskError::Failed(message) => ModelError::Inference(message),
                        });
                        let stored = stored.and_then(|reply| {
                            self.prompts_sent.fetch_add(1, Ordering::Relaxed);
                            if let Some(cache) = &self.cache {
                                cache.put(request.key, &reply).map_err(|e| self.fail(e.to_string()))?;
                            }
                            self.memo.lock().unwrap_or_else(|p| p.into_inner()).insert(request.key, reply);
                            Ok(())
                        });
                        if let Err(e) = stored {
                            stop.store(true, Ordering::Relaxed);
                            failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                        }
                    }
                });
            }
        });
        match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Answer `todo` without a server: record each request (a plan; answered as undecided), or
    /// read its answer from the responses file.
    fn answer_offline(&self, todo: &[&Request]) -> Result<(), ModelError> {
        let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
        for request in todo {
            let reply = if let Some(recorder) = &self.recorder {
                recorder.write(request.key, self.client.url(), &request.body).map_err(|e| self.fail(e.to_string()))?;
                Reply { content: String::new(), top: None }
            } else if let Some((reply, usage)) = self.responses.as_ref().and_then(|r| r.get(request.key)) {
                self.from_responses.fetch_add(1, Ordering::Relaxed);
                // What the answers cost where they were asked (a batch API's `usage`).
                if let Some((prompt, completion)) = usage {
                    self.client.counters.prompt_tokens.fetch_add(*prompt, Ordering::Relaxed);
                    self.client.counters.completion_tokens.fetch_add(*completion, Ordering::Relaxed);
                }
                reply.clone()
            } else {
                let file = self.responses.as_ref().map(|r| r.path().display().to_string()).unwrap_or_default();
                return Err(self.fail(format!(
                    "the prompt {} (id {}) has no answer in the responses file {file}: `fairpipe llm plan` lists the prompts of load_model, group_metrics, check and estimate; a search (generate, group_score) asks prompts that depend on the answers and needs a live endpoint",
                    quoted(&request.prompt),
                    offline::request_id(request.key)
                )));
            };
            memo.insert(request.key, reply);
        }
        Ok(())
    }

    /// What the run spent so far.
    pub fn llm_usage(&self) -> LlmUsage {
        let c = &self.client.counters;
        LlmUsage {
            endpoint: self.client.url().to_string(),
            base_url: self.config.base_url.clone(),
            model: self.config.model.clone(),
            scores: self.config.scores.name().to_string(),
            requests: c.requests.load(Ordering::Relaxed),
            prompts_sent: self.prompts_sent.load(Ordering::Relaxed),
            rows_asked: self.rows_asked.load(Ordering::Relaxed),
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
            repeats: self.repeats.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            unparsed: self.unparsed.lock().unwrap_or_else(|p| p.into_inner()).len() as u64,
            prompt_tokens: c.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: c.completion_tokens.load(Ordering::Relaxed),
            waiting_s: c.waiting_us.load(Ordering::Relaxed) as f64 / 1e6,
            backoff_s: c.backoff_us.load(Ordering::Relaxed) as f64 / 1e6,
            concurrency: self.config.concurrency,
            cache: self.cache.as_ref().map(|c| c.path().display().to_string()),
            api_key_used: self.key_env_value,
            from_responses: self.from_responses.load(Ordering::Relaxed),
            served_models: c.served_models.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect(),
            system_fingerprints: c.system_fingerprints.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect(),
            identity: self.identity.clone(),
            cache_from_another_model: self.cache_from_another_model,
            validity: self.validity.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            cost: self
                .config
                .price
                .map(|price| price.cost(c.prompt_tokens.load(Ordering::Relaxed), c.completion_tokens.load(Ordering::Relaxed))),
        }
    }

    /// `llm.validity`: ask `rows` (row-major) also `validity_samples` times each at
    /// `validity_temperature` (through a second model of the same block scoring from samples, with
    /// the same cache), and keep how far this model's logprob P(favourable) is from the sampled
    /// answers' favourable share ([`crate::model::Validity`]). `dir` and `answers` as for
    /// [`LlmModel::load`].
    pub fn check_validity(&self, rows: &[f64], dir: &Path, answers: &AnswerSource) -> Result<(), ModelError> {
        let width = self.domain.width().max(1);
        let n = rows.len() / width;
        if n == 0 {
            return Ok(());
        }
        let mut logprob = vec![0.0; n];
        crate::model::Model::predict_into(self, rows, &mut logprob)?;
        let sampling = LlmConfig {
            scores: ScoreFrom::Samples,
            samples: self.config.validity_samples,
            temperature: Some(self.config.validity_temperature),
            validity: None,
            ..self.config.clone()
        };
        let sampler = LlmModel::load(&sampling, dir, &self.domain, rows.get(..width), answers)?;
        let mut sampled = vec![0.0; n];
        crate::model::Model::predict_into(&sampler, rows, &mut sampled)?;
        let differences: Vec<f64> = logprob.iter().zip(&sampled).map(|(a, b)| (a - b).abs()).collect();
        let validity = crate::model::Validity {
            prompts: n as u64,
            samples: self.config.validity_samples,
            temperature: self.config.validity_temperature,
            mean_abs_difference: differences.iter().sum::<f64>() / n as f64,
            max_abs_difference: differences.iter().copied().fold(0.0, f64::max),
            requests: sampler.llm_usage().requests,
        };
        *self.validity.lock().unwrap_or_else(|p| p.into_inner()) = Some(validity);
        Ok(())
    }

    /// P(favourable) of a row from its answers (read as `answers` says); `None` when they are
    /// neither class.
    fn score(&self, requests: &[Request], memo: &HashMap<u128, Reply>, answers: &Answers) -> Result<Option<f64>, ModelError> {
        let replies = self.replies(requests, memo)?;
        if let Some(scale) = answers.scale() {
            return Ok(match self.config.scores {
                ScoreFrom::Logprobs => rating_from_logprobs(replies[0].top.as_deref().unwrap_or_default(), scale),
                ScoreFrom::Samples => rating_from_samples(&replies.into_iter().cloned().collect::<Vec<_>>(), scale),
                ScoreFrom::Labels => first_rating(&replies[0].content, scale).map(|r| normalised(r as f64, scale)),
            });
        }
        Ok(match self.config.scores {
            ScoreFrom::Logprobs => from_logprobs(replies[0].top.as_deref().unwrap_or_default(), answers),
            ScoreFrom::Samples => from_samples(&replies.into_iter().cloned().collect::<Vec<_>>(), answers),
            ScoreFrom::Labels => first_word_class(&replies[0].content, answers).map(|c| f64::from(u8::from(c == Class::Favourable))),
        })
    }

    /// The error that stops a run once more prompts than `max_unparsed` got answers that are
    /// not `expected`, quoting the first few of `asked`.
    fn too_many_unparsed(
        &self,
        asked: &[Vec<Request>],
        memo: &HashMap<u128, Reply>,
        unparsed: &HashSet<u128>,
        expected: &str,
    ) -> ModelError {
        let mut failed: Vec<String> = Vec::new();
        for requests in asked {
            if failed.len() >= QUOTED_PROMPTS {
                break;
            }
            if unparsed.contains(&requests[0].key) {
                let answer = memo.get(&requests[0].key).map(|r| r.content.clone()).unwrap_or_default();
                let line = format!("{} answered {answer:?}", quoted(&requests[0].prompt));
                if !failed.contains(&line) {
                    failed.push(line);
                }
            }
        }
        self.fail(format!(
            "{} answers are {expected}, more than `llm.max_unparsed = {}` allows; they are not read as any score. The first: {}",
            unparsed.len(),
            self.config.max_unparsed,
            failed.join("; ")
        ))
    }

    /// Whether the prompts show first names (the pipeline gave a `names` table).
    pub fn shows_names(&self) -> bool {
        self.renderer.shows_names()
    }

    /// The first names the prompt of encoded `row` shows, one per protected attribute with a
    /// `names` table (empty without one): see [`Renderer::names_shown`].
    pub fn names_shown(&self, row: &[f64]) -> Vec<String> {
        self.renderer.names_shown(row)
    }

    /// The `llm.base_url` this model asks.
    pub fn base_url(&self) -> &str {
        &self.config.base_url
    }

    /// A pairwise template at `path` (`shown` in messages) for this model's rows, with its
    /// `names` table: [`prompt::Renderer::render_pair`].
    pub fn pair_renderer(&self, path: &Path, shown: &str) -> Result<Renderer, ModelError> {
        Renderer::load(path, shown, &self.domain, &self.config.names).map_err(|e| self.fail(e.to_string()))
    }

    /// Ask each of `prompts` (pairwise choices between two candidates) as this model asks a row's
    /// prompt (the cache, the run's memory, `concurrency`, the budgets), and read P(the first
    /// candidate is chosen): the answer `labels[0]` against `labels[1]`, from the first token's
    /// `top_logprobs` normalised over the two, the share of samples, or one answer's first word.
    /// `None` where the answers name neither; past `max_unparsed` such prompts the run stops.
    pub fn choices(&self, prompts: &[String], labels: &[String; 2]) -> Result<Vec<Option<f64>>, ModelError> {
        let answers = Answers { favourable: vec![labels[0].clone()], unfavourable: vec![labels[1].clone()], scale: None };
        self.ask_scored(prompts.to_vec(), &answers, || format!("neither candidate's label ({})", labels.join(", ")))
    }

    /// Ask each of `prompts` (a choice of one among several candidates, labelled `labels` in the
    /// order listed) as this model asks a row's prompt, and read P(each label is chosen): from the
    /// first token's `top_logprobs` normalised over the labels, the share of samples, or one
    /// answer's first word. `None` where the answers name no label; past `max_unparsed` such
    /// prompts the run stops. A plan's placeholder is every label equally likely.
    pub fn picks(&self, prompts: &[String], labels: &[String]) -> Result<Vec<Option<Vec<f64>>>, ModelError> {
        // Every label an answer may be (the grammar, with `llm.grammar`, allows exactly these).
        let answers = Answers { favourable: labels.to_vec(), unfavourable: Vec::new(), scale: None };
        let uniform = vec![1.0 / labels.len().max(1) as f64; labels.len()];
        let read = |requests: &[Request], memo: &HashMap<u128, Reply>| -> Result<Option<Vec<f64>>, ModelError> {
            let replies = self.replies(requests, memo)?;
            Ok(match self.config.scores {
                ScoreFrom::Logprobs => label_shares_from_logprobs(replies[0].top.as_deref().unwrap_or_default(), labels),
                ScoreFrom::Samples => label_shares_from_samples(&replies.into_iter().cloned().collect::<Vec<_>>(), labels),
                ScoreFrom::Labels => first_word_label(&replies[0].content, labels).map(|i| {
                    let mut one = vec![0.0; labels.len()];
                    one[i] = 1.0;
                    one
                }),
            })
        };
        self.ask_read(prompts.to_vec(), &answers, uniform, read, || format!("no candidate's label ({})", labels.join(", ")))
    }

    /// The replies to one prompt's requests, from this run's memory.
    fn replies<'m>(&self, requests: &[Request], memo: &'m HashMap<u128, Reply>) -> Result<Vec<&'m Reply>, ModelError> {
        requests.iter().map(|r| memo.get(&r.key).ok_or_else(|| self.fail("an answer went missing".into()))).collect()
    }

    /// Ask `prompts` (the cache, the run's memory, `concurrency`, the budgets) and read each one's
    /// score as `answers` says: `None` where the answers are not `expected()` (counted as unparsed;
    /// past `max_unparsed` such prompts the run stops), 0.5 for every prompt of a plan.
    fn ask_scored(
        &self,
        prompts: Vec<String>,
        answers: &Answers,
        expected: impl FnOnce() -> String,
    ) -> Result<Vec<Option<f64>>, ModelError> {
        self.ask_read(prompts, answers, 0.5, |requests, memo| self.score(requests, memo, answers), expected)
    }

    /// Ask `prompts`, whose answers are one of `answers`, and `read` each one's answers: `None`
    /// (counted as unparsed; past `max_unparsed` such prompts the run stops, saying the answers
    /// are not `expected()`), `placeholder` for every prompt of a plan.
    fn ask_read<T: Clone>(
        &self,
        prompts: Vec<String>,
        answers: &Answers,
        placeholder: T,
        read: impl Fn(&[Request], &HashMap<u128, Reply>) -> Result<Option<T>, ModelError>,
        expected: impl FnOnce() -> String,
    ) -> Result<Vec<Option<T>>, ModelError> {
        self.rows_asked.fetch_add(prompts.len() as u64, Ordering::Relaxed);
        let per_prompt: Vec<Vec<Request>> = prompts.into_iter().map(|p| self.requests(p, answers)).collect::<Result<_, _>>()?;
        let all: Vec<&Request> = per_prompt.iter().flatten().collect();
        self.answer(&all)?;
        if self.recorder.is_some() {
            // A plan: every answer is a placeholder.
            return Ok(vec![Some(placeholder); per_prompt.len()]);
        }
        let memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
        let mut unparsed = self.unparsed.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::with_capacity(per_prompt.len());
        for requests in &per_prompt {
            let value = read(requests, &memo)?;
            if value.is_none() {
                unparsed.insert(requests[0].key);
            }
            out.push(value);
        }
        if unparsed.len() as u64 > self.config.max_unparsed {
            return Err(self.too_many_unparsed(&per_prompt, &memo, &unparsed, &expected()));
        }
        Ok(out)
    }
}

impl Model for LlmModel {
    fn n_features(&self) -> usize {
        self.domain.width()
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.domain.width().max(1);
        let prompts: Vec<String> = (0..out.len()).map(|r| self.prompt(&x[r * width..(r + 1) * width])).collect::<Result<_, _>>()?;
        let answers = &self.config.answers;
        let scores = self.ask_scored(prompts, answers, || match answers.scale() {
            Some((low, high)) => format!("no rating from {low} to {high} (`llm.answers.scale`)"),
            None => {
                let listed: Vec<String> = answers.favourable.iter().chain(&answers.unfavourable).cloned().collect();
                format!("neither a favourable nor an unfavourable answer ({})", listed.join(", "))
            }
        })?;
        // An unparsed answer (within `max_unparsed`) is scored 0.5.
        for (o, score) in out.iter_mut().zip(scores) {
            *o = score.unwrap_or(0.5);
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("llm {} at {}", self.config.model, self.config.base_url)
    }

    fn remote_usage(&self) -> Option<RemoteUsage> {
        let llm = self.llm_usage();
        let [latency_ms_p50, latency_ms_p95, latency_ms_p99] = latency_percentiles(&self.client.counters.latencies_ms);
        Some(RemoteUsage {
            requests: llm.requests,
            rows_sent: llm.prompts_sent,
            rows_asked: llm.rows_asked,
            cache_hits: llm.cache_hits + llm.repeats,
            batch_size: 1,
            concurrency: self.config.concurrency,
            latency_ms_p50,
            latency_ms_p95,
            latency_ms_p99,
            llm: Some(llm),
        })
    }

    fn labels_only(&self) -> bool {
        self.config.scores == ScoreFrom::Labels && self.config.answers.scale.is_none()
    }

    fn score_scale(&self) -> Option<[f64; 2]> {
        self.config.answers.scale().map(|(low, high)| [low as f64, high as f64])
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn budget_spent(&self) -> Option<String> {
        self.client.budget_spent().map(str::to_string)
    }

    fn answers_are_placeholders(&self) -> bool {
        self.recorder.is_some()
    }

    fn wants_thread_chunks(&self) -> bool {
        false
    }

    fn rows_per_call(&self) -> Option<usize> {
        Some(self.config.concurrency.saturating_mul(16).max(64))
    }
}
