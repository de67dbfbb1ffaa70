"""The roster reader: what spreadsheets write loads; every broken rule fails with one exact
'file:line: message'.

Each test writes a small roster into a temporary folder and works there, so messages show
the file as ``roster.csv``.
"""

from pathlib import Path

import pytest

from exercises.course.roster import RosterError, Student, load_roster

SAMPLE = Path(__file__).resolve().parents[3] / "problem_bank" / "assignments" / "sample_roster.csv"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def write(text: str | bytes, name: str = "roster.csv") -> Path:
    path = Path(name)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def problems(text: str | bytes) -> list[str]:
    with pytest.raises(RosterError) as err:
        load_roster(write(text))
    assert str(err.value) == "\n".join(err.value.errors)
    return err.value.errors


# --- what loads ------------------------------------------------------------------------------

def test_plain_roster():
    roster = load_roster(write("student_id,name,email\n"
                               "s1,Ada Lovelace,ada@example.edu\n"
                               "s2,,\n"))
    assert roster == (Student("s1", "Ada Lovelace", "ada@example.edu", 2),
                      Student("s2", "", "", 3))


def test_excel_export_bom_semicolons_multiline_names_extra_columns():
    text = ("\ufeffSection; Email ;Student_ID;Full name;NAME\r\n"
            "A;zoe@example.edu;s2026001;x;Zoë Hartmann\r\n"
            "\r\n"
            'B;lukasz@example.edu;s2026002;x;"Łukasz\r\nWiśniewski"\r\n'
            ";;;;\r\n"
            "B;mai@example.edu;s2026003;x;\"Nguyễn; Thị Mai\"\r\n")
    assert load_roster(write(text)) == (
        Student("s2026001", "Zoë Hartmann", "zoe@example.edu", 2),
        Student("s2026002", "Łukasz Wiśniewski", "lukasz@example.edu", 4),
        Student("s2026003", "Nguyễn; Thị Mai", "mai@example.edu", 7))


def test_semicolon_in_a_comma_header_stays_a_value():
    roster = load_roster(write("student_id,name,email,note\ns1,Søren,s@example.edu,a;b\n"))
    assert roster == (Student("s1", "Søren", "s@example.edu", 2),)


def test_spaces_around_values_are_dropped():
    roster = load_roster(write("student_id , name,email\n  s1 ,  Ada  , ada@example.edu \n"))
    assert roster == (Student("s1", "Ada", "ada@example.edu", 2),)


def test_sample_roster_loads():
    roster = load_roster(SAMPLE)
    assert len(roster) == 30
    assert len({s.id.lower() for s in roster}) == 30
    assert all(s.email.endswith("@example.edu") for s in roster)
    assert {"Zoë Hartmann", "Łukasz Wiśniewski", "Nguyễn Thị Mai", "Søren Mikkelsen"} <= \
        {s.name for s in roster}


# --- the file --------------------------------------------------------------------------------

def test_missing_file():
    with pytest.raises(RosterError) as err:
        load_roster("nowhere.csv")
    assert err.value.errors == ["nowhere.csv: no such file"]


def test_not_utf8_names_line_and_column():
    latin1 = "student_id,name,email\ns1,Ada,a@example.edu\n\ns2,Ren\u00e9e,r@example.edu\n"
    assert problems(latin1.encode("latin-1")) == [
        "roster.csv:4: not valid UTF-8 (byte 0xe9 at column 7); save the file as UTF-8"]


def test_not_utf8_column_counts_characters():
    text = "student_id,name,email\ns1,Zoë ".encode() + b"\xff" + b",z@example.edu\n"
    assert problems(text) == [
        "roster.csv:2: not valid UTF-8 (byte 0xff at column 8); save the file as UTF-8"]


def test_empty_file():
    assert problems("\n\n") == [
        "roster.csv: the file is empty (expected a header row: student_id,name,email)"]


def test_header_only():
    assert problems("student_id,name,email\n\n") == [
        "roster.csv: no students (the file has only a header row)"]


def test_unclosed_quote():
    assert problems('student_id,name,email\ns1,"Ada,a@example.edu\ns2,Bo,b@example.edu\n') == [
        'roster.csv:2: a "quoted" value in this row is never closed']


# --- the header ------------------------------------------------------------------------------

def test_missing_column_did_you_mean():
    assert problems("studentid,name,email\ns1,Ada,a@example.edu\n") == [
        "roster.csv:1: missing column 'student_id' (the header has: studentid, name, email); "
        "did you mean 'student_id' instead of 'studentid'?"]


def test_missing_columns_with_lms_names():
    assert problems("ID,Name,E-mail\ns1,Ada,a@example.edu\n") == [
        "roster.csv:1: missing column 'student_id' (the header has: ID, Name, E-mail); "
        "did you mean 'student_id' instead of 'ID'?"]


def test_missing_column_without_hint():
    assert problems("student_id,email\ns1,a@example.edu\n") == [
        "roster.csv:1: missing column 'name' (the header has: student_id, email)"]


def test_header_after_blank_lines_and_column_twice():
    assert problems("\n\nstudent_id,name,email,Email\ns1,Ada,a@example.edu,b@example.edu\n") == [
        "roster.csv:3: column 'email' appears 2 times"]


# --- the rows --------------------------------------------------------------------------------

def test_wrong_number_of_fields():
    assert problems("student_id,name,email\n"
                    "s1,Lovelace, Ada,a@example.edu\n"
                    "s2,Bo\n") == [
        'roster.csv:2: 4 fields, but the header has 3 (a comma inside a value needs '
        '"double quotes")',
        "roster.csv:3: 2 fields, but the header has 3"]


def test_wrong_number_of_fields_with_semicolons():
    assert problems("student_id;name;email\ns1;Ada;Lovelace;a@example.edu\n") == [
        'roster.csv:2: 4 fields, but the header has 3 (a semicolon inside a value needs '
        '"double quotes")']


def test_line_numbers_count_lines_inside_quotes():
    assert problems('student_id,name,email\ns1,"Ada\n\nLovelace",a@example.edu\n\ns 2,Bo,\n') == [
        "roster.csv:6: student_id 's 2' is not valid: use 1 to 64 letters (A-Z, a-z), digits "
        "and . _ @ + -, starting with a letter or digit (it becomes a folder name)"]


def test_empty_student_id():
    assert problems("student_id,name,email\n ,Ada,a@example.edu\n") == [
        "roster.csv:2: empty student_id"]


@pytest.mark.parametrize("sid", ["_s1", "s/1", "zoë", "s1!", "x" * 65, ".hidden"])
def test_invalid_student_id(sid):
    assert problems(f"student_id,name,email\n{sid},Ada,a@example.edu\n") == [
        f"roster.csv:2: student_id '{sid}' is not valid: use 1 to 64 letters (A-Z, a-z), digits "
        f"and . _ @ + -, starting with a letter or digit (it becomes a folder name)"]


@pytest.mark.parametrize("sid", ["s1", "A.b_c-d+e@f", "9" * 64])
def test_valid_student_ids(sid):
    assert load_roster(write(f"student_id,name,email\n{sid},,\n"))[0].id == sid


def test_duplicate_student_id_names_both_lines():
    assert problems("student_id,name,email\ns1,Ada,\ns2,Bo,\n\ns1,Cy,\n") == [
        "roster.csv:5: duplicate student_id 's1' (also on line 2)"]


def test_duplicate_student_id_ignoring_case():
    assert problems("student_id,name,email\nab12,Ada,\nAB12,Bo,\n") == [
        "roster.csv:3: student_id 'AB12' differs only in case from 'ab12' on line 2 (their "
        "folders would collide on macOS and Windows)"]


@pytest.mark.parametrize("email", ["ada.example.edu", "ada@", "@example.edu", "a@b@example.edu",
                                   "ada lovelace@example.edu"])
def test_bad_email(email):
    assert problems(f"student_id,name,email\ns1,Ada,{email}\n") == [
        f"roster.csv:2: email '{email}' does not look like an email address (name@domain, "
        f"no spaces)"]


def test_all_problems_at_once():
    assert problems("student_id,name,email\n"
                    "s1,Ada,ada\n"
                    ",Bo,bo@example.edu\n"
                    "s 3,Cy,cy at example.edu\n"
                    "s1,Di,di@example.edu\n") == [
        "roster.csv:2: email 'ada' does not look like an email address (name@domain, no spaces)",
        "roster.csv:3: empty student_id",
        "roster.csv:4: student_id 's 3' is not valid: use 1 to 64 letters (A-Z, a-z), digits "
        "and . _ @ + -, starting with a letter or digit (it becomes a folder name)",
        "roster.csv:4: email 'cy at example.edu' does not look like an email address "
        "(name@domain, no spaces)",
        "roster.csv:5: duplicate student_id 's1' (also on line 2)"]


def test_many_problems_are_capped():
    rows = "".join(f"s{i},Ada,not-an-email\n" for i in range(70))
    found = problems("student_id,name,email\n" + rows)
    assert len(found) == 51
    assert found[0] == ("roster.csv:2: email 'not-an-email' does not look like an email "
                        "address (name@domain, no spaces)")
    assert found[-1] == "… and 20 more"


# --- optional columns: email, and the LMS's ids -----------------------------------------------

def test_a_roster_without_an_email_column_loads_with_empty_emails():
    assert load_roster(write("student_id,name\ns1,Ada\ns2,Bo\n")) == (Student("s1", "Ada", "", 2),
                                                                     Student("s2", "Bo", "", 3))


def test_email_is_read_from_what_lms_exports_call_it():
    for header in ("E-mail", "Email address", "mail", "EMAIL"):
        assert load_roster(write(f"student_id,name,{header}\ns1,Ada,a@example.edu\n"))[0].email == "a@example.edu"
    assert problems("student_id,name,E-mail\ns1,Ada,not-an-email\n") == [
        "roster.csv:2: email 'not-an-email' does not look like an email address (name@domain, no spaces)"]


def test_lms_columns_by_their_own_names():
    roster = load_roster(write("student_id,name,email,lms_id,lms_login\n"
                               "s1,Ada,a@example.edu,1234,ada.l\ns2,Bo,,,\n"))
    assert roster == (Student("s1", "Ada", "a@example.edu", 2, "1234", "ada.l"), Student("s2", "Bo", "", 3))
    assert (roster[0].lms_id, roster[0].lms_login, roster[1].lms_id, roster[1].lms_login) == \
        ("1234", "ada.l", "", "")


def test_lms_columns_from_a_canvas_gradebook_export():
    text = ("Student,ID,SIS User ID,SIS Login ID,Section,student_id,name\n"
            "\"Lovelace, Ada\",1234,900001,ada.l,A,s1,Ada\n")
    assert load_roster(write(text)) == (Student("s1", "Ada", "", 2, "1234", "ada.l"),)


def test_lms_columns_from_a_moodle_export():
    text = "student_id,name,Email address,Moodle ID,Username\ns1,Ada,a@example.edu,77,alovelace\n"
    assert load_roster(write(text)) == (Student("s1", "Ada", "a@example.edu", 2, "77", "alovelace"),)


def test_sis_user_id_is_the_login_only_when_no_login_column_is_there():
    assert load_roster(write("student_id,name,SIS User ID\ns1,Ada,900001\n"))[0].lms_login == "900001"
    assert load_roster(write("student_id,name,Username,SIS User ID\ns1,Ada,ada,900001\n"))[0].lms_login == "ada"


def test_a_columns_own_name_wins_over_its_aliases_and_no_alias_is_a_student_id():
    roster = load_roster(write("student_id,name,ID,lms_id,Login\ns1,Ada,x-7,1234,ada\n"))
    assert (roster[0].id, roster[0].lms_id, roster[0].lms_login) == ("s1", "1234", "ada")
    # an export's own column is taken as it is (a roster may have had an "ID" column already)
    assert load_roster(write("student_id,name,ID\ns1,Ada,not a number\n"))[0].lms_id == "not a number"
    assert problems("ID,Username,name\n1234,ada,Ada\n")[0].startswith("roster.csv:1: missing column 'student_id'")


def test_lms_columns_by_their_own_names_are_checked():
    assert problems("student_id,name,lms_id,lms_login\ns1,Ada,12a,ada\ns2,Bo,55,ADA\ns3,Cy,55,cy\n") == [
        "roster.csv:2: lms_id '12a' is not a number (the LMS's numeric user id: Canvas's ID column, "
        "Moodle's user id)",
        "roster.csv:3: duplicate lms_login 'ADA' (also on line 2)",
        "roster.csv:4: duplicate lms_id '55' (also on line 3)"]


def test_an_lms_column_twice_is_a_problem():
    assert problems("student_id,name,ID,id\ns1,Ada,1,2\n") == ["roster.csv:1: column 'ID' appears 2 times"]
