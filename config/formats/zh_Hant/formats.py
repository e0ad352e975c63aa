"""Traditional Chinese numbers as Taiwan writes them: grouped by thousands with a comma (50,000),
as CLDR's zh-Hant and the page's script (Intl.NumberFormat) do. Django's own zh_Hant formats group by
ten thousands with no separator (50000); everything else is Django's."""

THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
