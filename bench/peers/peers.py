"""Peers for bench/peers/compare.sh: generate the shared history, and time LangChain's trim_messages and
LlamaIndex's ChatMemoryBuffer.get on it. Both use an approximate token counter (about four characters per
token, as chatctx does), so no tokenizer download is needed and the budgets mean the same thing."""
import json
import random
import statistics
import sys
import time

WORDS = ("deploy migration failed again please check the logs tomorrow meeting poll lunch image review update "
         "ticket release branch what about this link summary budget plan trip hotel booking garden photo").split()


def generate(n, budget, path):
    rnd = random.Random(7)
    messages = []
    for i in range(n):
        bot = i % 5 == 4
        name = "bot" if bot else f"user{rnd.randrange(12)}"
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randrange(6, 30)))
        messages.append({"role": "assistant" if bot else "user", "name": name, "text": text})
    json.dump({"budget": budget, "messages": messages}, open(path, "w"))


def approx_tokens(text):
    return len(text) // 4 + 4


def timed(fn, runs):
    us = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        us.append((time.perf_counter() - t) * 1e6)
    us.sort()
    return statistics.median(us), us[int(len(us) * 0.99) - 1]


def measure(path):
    doc = json.load(open(path))
    budget, raw = doc["budget"], doc["messages"]

    from langchain_core.messages import AIMessage, HumanMessage, trim_messages
    lc = [AIMessage(m["text"]) if m["role"] == "assistant" else HumanMessage(m["text"], name=m["name"]) for m in raw]
    counter = lambda msgs: sum(approx_tokens(m.content) for m in msgs)
    out = trim_messages(lc, max_tokens=budget, token_counter=counter, strategy="last")
    p50, p99 = timed(lambda: trim_messages(lc, max_tokens=budget, token_counter=counter, strategy="last"), 50)
    print(json.dumps({"case": "langchain_core trim_messages", "p50_us": p50, "p99_us": p99, "kept": len(out)}))

    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import ChatMemoryBuffer
    li = [ChatMessage(role=m["role"], content=m["text"]) for m in raw]
    memory = ChatMemoryBuffer.from_defaults(chat_history=li, token_limit=budget,
                                            tokenizer_fn=lambda s: [0] * approx_tokens(s))
    out = memory.get()
    p50, p99 = timed(memory.get, 50)
    print(json.dumps({"case": "llama_index_core ChatMemoryBuffer.get", "p50_us": p50, "p99_us": p99, "kept": len(out)}))


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        measure(sys.argv[2])
