"""The words of the CloudWave feedback comments: what a course editor edits to change them.

``feedback`` assembles each comment from these: a body (``PRAISE``, ``COMPLAINTS``, their negated
variants, or one side of a ``MIRRORED`` pair), an optional opener and second sentence, a closer,
then typos and slang (``SPELLING``). Slots in braces are filled at random: ``{f}`` a feature,
``{n}``/``{m}`` numbers, ``{name}`` a support agent, ``{comp}`` a competitor, ``{month}``,
``{wish}`` a wished-for feature. Any change here changes ``feedback.json`` (run ``make data``,
then refresh the pages that read it and the numbers of ``data/README.md``).
"""

FEATURES = (
    "the dashboard", "reports", "the mobile app", "SSO", "the API", "search", "exports",
    "notifications", "the editor", "the Slack integration", "sync", "file uploads",
    "the calendar view", "the admin console", "two-factor login", "the desktop app", "webhooks",
    "the kanban board", "CSV import", "dark mode", "the Android app", "the iOS app", "comments",
    "shared folders", "the audit log", "the timeline", "permissions", "the Outlook add-in",
)
NAMES = ("Maria", "Tom", "Priya", "Jonas", "Aisha", "Luis", "Mei", "Sam", "Olga", "Kwame")
COMPETITORS = ("Trello", "Asana", "a spreadsheet", "Jira", "our old tool", "Notion", "email threads")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
WISHES = ("a dark mode", "bulk edit", "keyboard shortcuts", "an offline mode", "recurring tasks",
          "custom fields", "a Gantt view", "better filters", "audit exports", "a public API")

# Order-sensitive pairs: the two sides use the same words, and only their order says whether the
# customer is happy. Listed as (praise, complaint category, complaint).
MIRRORED = (
    ("it was bad before, now it's great", "bug", "it was great before, now it's bad"),
    ("used to be slow, now it's fast", "performance", "used to be fast, now it's slow"),
    ("not slow, {f} is fast", "performance", "not fast, {f} is slow"),
    ("fast, not slow at all", "performance", "slow, not fast at all"),
    ("it's not hard, it's easy", "onboarding", "it's not easy, it's hard"),
    ("confusing at first, now easy", "onboarding", "easy at first, now confusing"),
    ("pricey at first, now worth it", "billing", "worth it at first, now pricey"),
    ("great, {f} works and nothing is broken", "bug", "{f} is broken and nothing works, great"),
    ("{f} is great, never a problem", "bug", "{f} is a problem, never great"),
    ("the bug is gone, sync is back", "bug", "sync is gone, the bug is back"),
    ("loads in seconds, not minutes", "performance", "loads in minutes, not seconds"),
    ("the bill is not high, price is fair", "billing", "the price is not fair, bill is high"),
)

PRAISE = (
    "Love the update to {f}, saves me {n} minutes a day",
    "{f} is fantastic, the whole team uses it",
    "Great job on the update to {f}!",
    "Support was super quick and friendly, thanks {name}",
    "Onboarding our team took one afternoon. Impressive.",
    "{f} is exactly what we needed",
    "Really smooth experience so far",
    "best tool we've adopted this year",
    "{name} from support went above and beyond",
    "Clean UI, fast, reliable. Five stars.",
    "Switched from {comp} and it's way better",
    "{f} makes my job so much easier",
    "Keep it up, {f} keeps getting better",
    "Works great on my phone and my laptop",
    "Setup was painless and the docs are clear",
    "Our team finally stopped emailing spreadsheets around",
    "{f} looks gorgeous now",
    "Huge fan of {f}. Thank you!",
    "Great value for {n} seats",
    "love it love it love it",
    "Super intuitive, my whole team got it in a day",
    "{f} is fast and reliable",
)
PRAISE_NEGATED = (
    "Never had a single problem with {f}",
    "No complaints here, {f} just works",
    "I can't think of anything to improve",
    "{f} never lets me down",
    "Was not sure at first but now I love it",
    "Didn't expect much, but {f} is great",
    "Nothing broke during the migration, amazing",
    "Couldn't be happier with {f}",
    "Not a single outage this quarter, great work",
    "no issues with billing, the invoices are clear",
    "Never thought {f} could be this easy",
    "Not once did {f} crash on me",
    "Can't imagine working without {f} now",
    "No more chasing people for updates, thank you",
    "I don't miss {comp} at all",
)
COMPLAINTS = {
    "bug": (
        "{f} crashes when I upload a file over {n} MB",
        "Got logged out {n} times today",
        "{f} shows duplicate entries",
        "The new theme makes {f} unreadable",
        "sync keeps failing with a timeout error",
        "{f} crashes on startup since the last update",
        "Error 500 when I open {f}",
        "Attachments vanish after saving",
        "{f} loses my changes if I switch tabs",
        "Push notifications arrive twice",
    ),
    "billing": (
        "Charged twice for {month}, please refund",
        "Why did my invoice go up by {n}%?",
        "Cancelled last month and still got charged",
        "We were billed for {n} seats we removed",
        "Need the invoice address changed for {month}",
        "Credit card update fails on the billing page",
        "The annual discount disappeared from our invoice",
        "Please send a copy of the {month} receipt",
    ),
    "feature_request": (
        "Would love {wish} in {f}",
        "Please add an export to Excel",
        "Can we get SSO on the Team plan?",
        "It would be great if {f} had keyboard shortcuts",
        "Any plans for a Linux desktop app?",
        "Great tool, wish it had {wish}",
        "Please add {wish} to {f}",
        "feature idea: let admins set default views",
        "Would be great to tag people in {f}",
    ),
    "performance": (
        "{f} takes {n} seconds to load",
        "search is slow with more than {n} records",
        "{f} lags a lot on older laptops",
        "Everything freezes for a few seconds when I scroll",
        "Reports time out for our biggest project",
        "Page loads got slower every week this month",
        "Typing in {f} has a noticeable delay",
    ),
    "onboarding": (
        "the setup guide is confusing",
        "Took us {n} days to import our data",
        "Onboarding call was cancelled twice",
        "Where do I find the admin settings?",
        "Importing from {comp} was harder than expected",
        "The invite link expired before my team used it",
        "Which plan do we need for {f}?",
    ),
}
COMPLAINTS_NEGATED = {
    "bug": (
        "{f} works great? not at all, it crashes",
        "{f} never works after the update",
        "Great app, but {f} is not working",
        "{f} was great, but not anymore",
        "{f} does not load, just a blank page",
        "Can't save anything in {f}",
        "Nothing happens when I click export",
        "{f} is not bad, just broken on mobile",
        "Not great: {f} logged me out again",
    ),
    "billing": (
        "Not great: we were billed for {n} seats we removed",
        "I never agreed to the annual plan",
        "The billing page does not show our VAT number",
        "Pricing is great, but not for a team of {n}",
        "No invoice for {month} in the portal",
        "Great product, not worth the price increase",
        "Can't download invoices older than {n} months",
    ),
    "feature_request": (
        "Not a bug, but {f} needs bulk edit",
        "{f} is great but I'd love an API for it",
        "Please don't make us re-login every day",
        "Good, but not great without {wish}",
        "Can't filter {f} by owner, please add it",
        "No way to pin {f} to the sidebar yet",
    ),
    "performance": (
        "The app is not fast anymore",
        "Fast? not at all, {f} is so slow",
        "{f} never loads before my meeting starts",
        "Great features, but not fast enough for us",
        "It was fast, not anymore after the update",
        "Not usable on hotel wifi, too slow",
    ),
    "onboarding": (
        "Not sure how to invite my team",
        "No idea where to start, the tutorial skips steps",
        "I never got the welcome email",
        "Great docs, but not for admins",
        "Couldn't connect {f} during setup",
        "Nobody told us we needed an admin account",
    ),
}
OPENERS = ("", "", "", "", "", "Hi team, ", "Quick note: ", "FYI ", "Honestly, ", "Hello, ", "Ok so ",
           "Hey! ", "Feedback: ", "Re: ticket {n} - ")
CLOSERS = ("", "", "", "", "", "", " Thanks!", " thx", "!!", " We have {n} seats.",
           " Using it daily for {m} months.", " — sent from my phone", " Cheers, {name}")
HAPPY_CLOSERS = (" :)", " Keep it up.", " \U0001F44D", " 10/10")
UNHAPPY_CLOSERS = (" pls fix", " :(", " Ticket #{n}.", " Otherwise fine.", " Please advise.",
                   " (tested on Chrome and Firefox)", " Our admin says the same.", " \U0001F620")
SPELLING = {"please": "pls", "thanks": "thx", "you": "u", "because": "bc", "really": "rly"}
