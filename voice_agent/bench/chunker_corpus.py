"""The sentence-boundary corpus shared by the chunker tests and benchmark: (category, text, chunks).

Written by hand per category; where a category is a list of words (abbreviations, months), each
word gets the same sentence frame, and the expected split is stated with the frame. The chunker is
run with its latency controls off (``min_chars=0``, ``quick_first_chunk=False``) so the corpus
measures boundary detection alone; the latency controls have their own tests.
"""

from __future__ import annotations

Case = tuple[str, str, list[str]]

CASES: list[Case] = []


def case(category: str, text: str, *chunks: str) -> None:
    CASES.append((category, text, list(chunks)))


# Plain sentences and terminators.
case("basic", "Hello there. How are you?", "Hello there.", "How are you?")
case("basic", "Stop! Look. Listen.", "Stop!", "Look.", "Listen.")
case("basic", "One sentence only.", "One sentence only.")
case("basic", "No final punctuation here", "No final punctuation here")
case("basic", "First.  Second with two spaces.", "First.", "Second with two spaces.")
case("basic", "Tabs work too.\tThe next one.", "Tabs work too.", "The next one.")
case("basic", "It ended. 42 people came.", "It ended.", "42 people came.")
case("basic", "a lowercase start. and another", "a lowercase start. and another")
case("clusters", "Really?! Yes.", "Really?!", "Yes.")
case("clusters", "What?!? No way!!", "What?!?", "No way!!")
case("clusters", "Why?? Because.", "Why??", "Because.")
case("clusters", "Wow!!! That is big.", "Wow!!!", "That is big.")
case("ellipsis", "Well... I am not sure.", "Well...", "I am not sure.")
case("ellipsis", "Wait... what happened?", "Wait... what happened?")
case("ellipsis", "Hmm… Let me think.", "Hmm…", "Let me think.")
case("ellipsis", "So… maybe later.", "So… maybe later.")
case("ellipsis", "The list goes on... and on.", "The list goes on... and on.")

# Titles and honorifics never end a sentence.
for title in ["Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "St.", "Sr.", "Jr.", "Rev.", "Gen.", "Capt.", "Lt."]:
    case("titles", f"I met {title} Smith today. He was kind.", f"I met {title} Smith today.", "He was kind.")
case("titles", "Dr. Jones and Prof. Lee agreed. Good.", "Dr. Jones and Prof. Lee agreed.", "Good.")
case("titles", "She lives on Main St. near the park.", "She lives on Main St. near the park.")

# Latin and reference abbreviations never end a sentence.
case("latin", "Use tools, e.g. a hammer. Then stop.", "Use tools, e.g. a hammer.", "Then stop.")
case("latin", "Bring fruit, i.e. Apples or pears. Thanks.", "Bring fruit, i.e. Apples or pears.", "Thanks.")
case("latin", "It was Smith vs. Jones. The court ruled.", "It was Smith vs. Jones.", "The court ruled.")
case("latin", "See the results, cf. Table two. They hold.", "See the results, cf. Table two.", "They hold.")
case("latin", "Smith et al. found it. It held.", "Smith et al. found it.", "It held.")
case("latin", "Pack shirts, socks, etc. and go.", "Pack shirts, socks, etc. and go.")
case("latin", "Pack shirts, socks, etc. Then go.", "Pack shirts, socks, etc.", "Then go.")
case("latin", "It weighs approx. Ten kilos.", "It weighs approx. Ten kilos.")
case("references", "See Fig. 3 for details. It is clear.", "See Fig. 3 for details.", "It is clear.")
case("references", "Read No. 5 first. Then No. 6.", "Read No. 5 first.", "Then No. 6.")
case("references", "Turn to Vol. 2 now. Done.", "Turn to Vol. 2 now.", "Done.")
case("references", "It is on pp. 10 and 11. Read it.", "It is on pp. 10 and 11.", "Read it.")

# Initialisms: they end a sentence only when the next word opens one.
case("initialisms", "He lives in the U.S. It is large.", "He lives in the U.S.", "It is large.")
case("initialisms", "The U.S. Army is big.", "The U.S. Army is big.")
case("initialisms", "She moved to the U.K. She likes it.", "She moved to the U.K.", "She likes it.")
case("initialisms", "The U.K. Parliament met.", "The U.K. Parliament met.")
case("initialisms", "He has a Ph.D. The thesis was long.", "He has a Ph.D.", "The thesis was long.")
case("initialisms", "Talk to the U.N. Security Council.", "Talk to the U.N. Security Council.")
case("initialisms", "We met in D.C. Then we flew home.", "We met in D.C.", "Then we flew home.")
case("initialisms", "The E.U. We love it.", "The E.U.", "We love it.")
case("times", "Meet me at 5 p.m. Then we eat.", "Meet me at 5 p.m.", "Then we eat.")
case("times", "It starts at 9 a.m. sharp.", "It starts at 9 a.m. sharp.")
case("times", "It starts at 9 a.m. Eastern time.", "It starts at 9 a.m. Eastern time.")
case("times", "The train leaves at 10:45. Be there.", "The train leaves at 10:45.", "Be there.")
case("times", "Open 9:00-17:30 daily. Closed Sunday.", "Open 9:00-17:30 daily.", "Closed Sunday.")
case("times", "Call at 7.30 tonight. Thanks.", "Call at 7.30 tonight.", "Thanks.")

# Company suffixes.
for suffix in ["Inc.", "Ltd.", "Co.", "Corp.", "LLC."]:
    case("companies", f"He works at Acme {suffix} The pay is good.", f"He works at Acme {suffix}", "The pay is good.")
    case("companies", f"Acme {suffix} Announced a product.", f"Acme {suffix} Announced a product.")

# Months and weekdays, abbreviated.
for month in ["Jan.", "Feb.", "Mar.", "Apr.", "Jun.", "Jul.", "Aug.", "Sep.", "Sept.", "Oct.", "Nov.", "Dec."]:
    case("months", f"It opens on {month} 5 this year. Come early.", f"It opens on {month} 5 this year.",
         "Come early.")
for day in ["Mon.", "Tue.", "Wed.", "Thu.", "Fri.", "Sat.", "Sun."]:
    case("weekdays", f"The meeting is on {day} at noon. Be there.", f"The meeting is on {day} at noon.",
         "Be there.")
case("months", "It was due in Dec. The delay hurt.", "It was due in Dec.", "The delay hurt.")

# Numbers: decimals, versions, addresses, money, thousands.
case("decimals", "Pi is 3.14159 roughly. Nice.", "Pi is 3.14159 roughly.", "Nice.")
case("decimals", "It grew 2.5 times. Then it fell.", "It grew 2.5 times.", "Then it fell.")
case("decimals", "The rate is .5 percent. Low.", "The rate is .5 percent.", "Low.")
case("decimals", "Scores were 9.5, 8.7 and 7.25. Fine.", "Scores were 9.5, 8.7 and 7.25.", "Fine.")
case("decimals", "The value is 0.001. Small.", "The value is 0.001.", "Small.")
case("versions", "Upgrade to v2.1.3 now. It is safer.", "Upgrade to v2.1.3 now.", "It is safer.")
case("versions", "Python 3.12.1 is installed. Good.", "Python 3.12.1 is installed.", "Good.")
case("versions", "We run version 1.0. It works.", "We run version 1.0.", "It works.")
case("addresses", "Ping 10.0.0.1 first. Then 192.168.1.20.", "Ping 10.0.0.1 first.", "Then 192.168.1.20.")
case("addresses", "The server is at 127.0.0.1. It answers.", "The server is at 127.0.0.1.", "It answers.")
case("currency", "It costs $42.50 today. Buy it.", "It costs $42.50 today.", "Buy it.")
case("currency", "Pay €3.99 or £2.50. Thanks.", "Pay €3.99 or £2.50.", "Thanks.")
case("currency", "The fund has $1.2 billion. Big.", "The fund has $1.2 billion.", "Big.")
case("thousands", "About 1,000,000 people came. Wow.", "About 1,000,000 people came.", "Wow.")
case("thousands", "In Germany 1.234,56 euros. Odd.", "In Germany 1.234,56 euros.", "Odd.")
case("thousands", "It sold 12,500 units. Then 13,000.", "It sold 12,500 units.", "Then 13,000.")
case("percent", "Growth was 4.5%. That is high.", "Growth was 4.5%.", "That is high.")

# URLs, e-mail addresses, file names and paths.
case("urls", "Visit example.com today. It is free.", "Visit example.com today.", "It is free.")
case("urls", "Go to https://docs.aws.amazon.com/sagemaker/ now. Read it.",
     "Go to https://docs.aws.amazon.com/sagemaker/ now.", "Read it.")
case("urls", "See www.python.org. It has docs.", "See www.python.org.", "It has docs.")
case("urls", "Open http://localhost:8080/ping. It says healthy.", "Open http://localhost:8080/ping.",
     "It says healthy.")
case("urls", "The page is at example.com/a.b.html today. Good.", "The page is at example.com/a.b.html today.", "Good.")
case("email", "Write to jane.doe@example.com soon. Thanks.", "Write to jane.doe@example.com soon.", "Thanks.")
case("email", "Mail support@aws.example.org. They reply.", "Mail support@aws.example.org.", "They reply.")
case("files", "Edit config.yaml first. Then run it.", "Edit config.yaml first.", "Then run it.")
case("files", "Open README.md and read. Done.", "Open README.md and read.", "Done.")
case("files", "The script is run.sh. It is short.", "The script is run.sh.", "It is short.")
case("files", "Match *.py files. Skip the rest.", "Match *.py files.", "Skip the rest.")
case("paths", "Look in /etc/nginx/nginx.conf now. Good.", "Look in /etc/nginx/nginx.conf now.", "Good.")
case("paths", "Use ./dev.sh test to check. It passes.", "Use ./dev.sh test to check.", "It passes.")
case("paths", "Open C:\\Users\\me\\notes.txt now. Done.", "Open C:\\Users\\me\\notes.txt now.", "Done.")

# Closing quotes and brackets after the terminator.
case("quotes", 'She said "stop." Then left.', 'She said "stop."', "Then left.")
case("quotes", "He asked “why?” Nobody knew.", "He asked “why?”", "Nobody knew.")
case("quotes", "It was 'fine.' We moved on.", "It was 'fine.'", "We moved on.")
case("quotes", '"Go now!" he shouted.', '"Go now!" he shouted.')
case("quotes", '"Is it ready?" She nodded.', '"Is it ready?"', "She nodded.")
case("brackets", "It works (mostly.) Try it.", "It works (mostly.)", "Try it.")
case("brackets", "(This is aside.) Back to work.", "(This is aside.)", "Back to work.")
case("brackets", "See the note [below.] It helps.", "See the note [below.]", "It helps.")

# A terminator inside an unclosed bracket or quote.
case("unclosed", "He said (see Fig. 2. It is odd) nothing. Then left.",
     "He said (see Fig. 2. It is odd) nothing.", "Then left.")
case("unclosed", 'She wrote "Stop. Do not go" on it. Done.', 'She wrote "Stop. Do not go" on it.', "Done.")
case("unclosed", "Options [a. First. b. Second] exist. Pick.", "Options [a. First. b. Second] exist.", "Pick.")
case("unclosed", "He read “It ends. The end” aloud. Fine.", "He read “It ends. The end” aloud.", "Fine.")

# Initials.
case("initials", "J. R. R. Tolkien wrote it. Yes.", "J. R. R. Tolkien wrote it.", "Yes.")
case("initials", "Call George W. Bush now. Fine.", "Call George W. Bush now.", "Fine.")
case("initials", "Ask A. Smith. She knows.", "Ask A. Smith.", "She knows.")

# Lists, headings, paragraphs.
case("lists", "1. First item\n2. Second item", "1. First item", "2. Second item")
case("lists", "Steps:\n1. Install it.\n2. Run it.", "Steps:", "1. Install it.", "2. Run it.")
case("lists", "- apples\n- pears\n- plums", "- apples", "- pears", "- plums")
case("lists", "* one\n* two", "* one", "* two")
case("lists", "Options:\n- Fast. Cheap.\n- Slow.", "Options:", "- Fast.", "Cheap.", "- Slow.")
case("lists", "10. Tenth item here\n11. Eleventh", "10. Tenth item here", "11. Eleventh")
case("lists", "Pick one. 1. Red 2. Blue", "Pick one.", "1. Red 2. Blue")
case("lists", "• bullet one\n• bullet two", "• bullet one", "• bullet two")
case("headings", "## Heading\n\nBody text here.", "## Heading", "Body text here.")
case("headings", "# Title\nIntro line. More.", "# Title", "Intro line.", "More.")
case("headings", "### Batch vs. incremental\nText.", "### Batch vs. incremental", "Text.")
case("paragraphs", "First paragraph.\n\nSecond paragraph.", "First paragraph.", "Second paragraph.")
case("paragraphs", "A line without stop\n\nNext one", "A line without stop", "Next one")
case("paragraphs", "Line one\nline two", "Line one", "line two")
case("paragraphs", "\n\nLeading blank lines. Ok.", "Leading blank lines.", "Ok.")
case("paragraphs", "Ends with newline.\n", "Ends with newline.")

# Markdown inline.
case("markdown", "**Bold.** Then plain.", "**Bold.**", "Then plain.")
case("markdown", "Use `x.y()` here. Done.", "Use `x.y()` here.", "Done.")
case("markdown", "It is *very* good. Yes.", "It is *very* good.", "Yes.")
case("markdown", "Compute x**2 now. Then stop.", "Compute x**2 now.", "Then stop.")
case("markdown", "> Quoted line. Still quoted.", "> Quoted line.", "Still quoted.")

# CJK terminators.
case("cjk", "今日は晴れです。明日も。", "今日は晴れです。", "明日も。")
case("cjk", "本当？すごい！", "本当？", "すごい！")
case("cjk", "「はい。」と言った。次。", "「はい。」と言った。", "次。")
case("cjk", "English first. 日本語です。", "English first.", "日本語です。")
case("cjk", "你好。我很好！", "你好。", "我很好！")

# Sentences that start with digits or quotes.
case("openers", "It rained. 2024 was wet.", "It rained.", "2024 was wet.")
case("openers", "Done. \"Next,\" she said.", "Done.", "\"Next,\" she said.")
case("openers", "Done. (Mostly.) Next.", "Done.", "(Mostly.)", "Next.")
case("openers", "End. — A dash opens this.", "End.", "— A dash opens this.")
case("openers", "OK. iPhone sales grew.", "OK. iPhone sales grew.")

# Mixed and longer passages.
case("passages", "Dr. Smith measured 329.3 ms vs. 156.7 ms. That is a 52.4% cut! Impressive?",
     "Dr. Smith measured 329.3 ms vs. 156.7 ms.", "That is a 52.4% cut!", "Impressive?")
case("passages", "The U.S. Navy, e.g. the 5th Fleet, left at 6 a.m. It returned on Jan. 3.",
     "The U.S. Navy, e.g. the 5th Fleet, left at 6 a.m.", "It returned on Jan. 3.")
case("passages", "Install v1.2 from example.com. Then run ./setup.sh. It takes 2.5 min.",
     "Install v1.2 from example.com.", "Then run ./setup.sh.", "It takes 2.5 min.")
case("passages", "Mr. and Mrs. Smith arrived. They were late. Why? Traffic.",
     "Mr. and Mrs. Smith arrived.", "They were late.", "Why?", "Traffic.")
case("passages", "Acme Inc. It sells widgets. Acme Inc. Widgets sell well.",
     "Acme Inc.", "It sells widgets.", "Acme Inc. Widgets sell well.")
