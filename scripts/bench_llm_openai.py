"""The `openai` Python client's side of benches/llm.rs: N chat completions (the same requests
fairpipe sends: one prompt each, max_tokens 1, logprobs with 20 alternatives) to BASE_URL with
CONCURRENCY in flight (AsyncOpenAI + asyncio.gather, bounded by a semaphore), over distinct
prompts from income FROM on. Prints requests per second (wall) and the process's CPU time per
request (time.process_time).

    python bench_llm_openai.py BASE_URL CONCURRENCY N FROM
"""

import asyncio
import sys
import time

import openai
from openai import AsyncOpenAI


def prompts(n: int, start: int):
    sexes = ("Female", "Male")
    return [
        f"Applicant: income={start + k // 20}; years={k % 10}; sex={sexes[(k // 10) % 2]}.\nShould the loan be approved? Answer yes or no."
        for k in range(n)
    ]


async def main(base_url: str, concurrency: int, n: int, start: int) -> None:
    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    gate = asyncio.Semaphore(concurrency)

    async def ask(prompt: str) -> None:
        async with gate:
            reply = await client.chat.completions.create(
                model="planted",
                messages=[{"role": "user", "content": prompt}],
                temperature=0,
                max_tokens=1,
                logprobs=True,
                top_logprobs=20,
            )
            assert reply.choices[0].logprobs.content[0].top_logprobs

    todo = prompts(n, start)
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(ask(p) for p in todo))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await client.close()
    print(f"openai c{concurrency} requests_per_s {n / wall:.0f}")
    print(f"openai c{concurrency} cpu_us_per_request {cpu / n * 1e6:.1f}")
    print(f"openai c{concurrency} version {openai.__version__}")


if __name__ == "__main__":
    base_url, concurrency, n, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    asyncio.run(main(base_url, concurrency, n, start))
