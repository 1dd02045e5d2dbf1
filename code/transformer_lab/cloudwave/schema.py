"""The CloudWave data sets' schema: file names, columns and the values a column may hold.

The loaders (``transformer_lab.datasets``) and the models (``transformer_lab.bakeoff``) import
these; the generators write them. Changing one changes the files (``make data``) and every page
that reads them.
"""

FEEDBACK_FILE = "feedback.json"
CUSTOMER360_FILE = "customer360.csv"
USAGE_GRID_FILE = "usage_grid.csv"
EVENTS_FILE = "events.json"
FEEDBACK_COLUMNS = (
    "feedback_id",
    "customer_id",
    "created_at",
    "channel",
    "category",
    "feedback_text",
    "rating",
)
CUSTOMER360_COLUMNS = (
    "customer_id",
    "tenure_months",
    "plan_tier",
    "seats",
    "monthly_spend",
    "support_tickets_90d",
    "logins_30d",
    "nps_score",
    "churned",
)
CHANNELS = ("email", "in_app", "chat", "survey", "app_review")
CATEGORIES = ("praise", "bug", "billing", "feature_request", "performance", "onboarding")
PLAN_TIERS = ("Starter", "Team", "Business", "Enterprise")
USAGE_GRID_COLUMNS = ("customer_id", "day_of_week", "hour", "active_users")
EVENTS_COLUMNS = ("session_id", "customer_id", "timestamp", "event")
EVENT_TYPES = (
    "login",
    "login_failed",
    "password_reset",
    "view_dashboard",
    "edit_task",
    "export_report",
    "invite_user",
    "contact_support",
    "logout",
)
