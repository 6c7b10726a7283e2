"""Number-heavy English written by others: Kokoro-FastAPI's text-normalisation test cases
(remsky/Kokoro-FastAPI, ``api/tests/test_normalizer.py``, Apache-2.0), taken by one rule: every case
of its money, time, numbers, thousands-separator, range and units sections that holds a digit and at
least three space-separated words, except the three that probe the normaliser's limits rather than
text a person writes (hundreds of digits in a row, ``$1.5million``, ``12,34``). Kept verbatim,
including lower-case "london" and unfinished clauses; the agent's normaliser turns them into words
before they are spoken, as it does in an answer."""

SENTENCES = [
    # money
    "He lost $5.3 thousand.",
    "He went gambling and lost about $25.05k.",
    "To put it weirdly -$6.9 million",
    "It costs $50.3.",
    "The plant cost $200,000.8.",
    "Your shopping spree cost $674.03!",
    "€30.2 is in euros",
    "It costs $50.",
    "still slated to lose $400 million.",
    "an endowment of $14.8 billion;",
    "I spent $200,000 on stuff",
    # time
    "Your flight leaves at 10:35 pm",
    "He departed for london around 5:03 am.",
    "Only the 13:42 and 15:12 slots are available.",
    "It is currently 1:00 pm",
    "It is currently 3:00",
    "12:00 am is midnight",
    "Lap time 1:02:03",
    "Finished in 0:05:01",
    "Logged at 12:30:15 pm",
    # numbers
    "I bought 1035 cans of soda",
    "The bus has a maximum capacity of 62 people",
    "There are 1300 products left in stock",
    "The population is 7,890,000 people.",
    "He looked around but only found 1.6k of the 10k bricks",
    "The book has 342 pages.",
    "He made -50 sales today.",
    "Year 1999 and 2024",
    "The 1980S were loud",
    "It is 0.5 done",
    # thousands separators
    "3,497 head of cattle",
    "the 3,497th item",
    "The year 2,024",
    # ranges and dotted versions
    "Version 2.0.1 released",
    "Only .5 left",
    "Saved as file_1",
    # units
    "It is 10 km away",
]
